package eks

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/poll"
)

// DeleteNodeGroup deletes a node group and waits, with backoff bounded by
// ctx, until DescribeNodegroup says ResourceNotFoundException. A group that
// is already gone is success. EKS refuses to delete a group while it is
// CREATING or UPDATING (ResourceInUseException), so such a group is first
// waited out; DELETE_FAILED gives *NodeGroupFailedError.
func (c *Client) DeleteNodeGroup(ctx context.Context, cluster, name string) error {
	what := fmt.Sprintf("EKS node group (%s:%s)", cluster, name)
	deleting := false
	return poll.Until(ctx, waitLog, "deletion of "+what, checkNow, func(ctx context.Context) (bool, error) {
		g, found, err := c.ReadNodeGroup(ctx, cluster, name)
		if err != nil || !found {
			return !found, err
		}
		switch ekstypes.NodegroupStatus(g.Status) {
		case ekstypes.NodegroupStatusCreating, ekstypes.NodegroupStatusUpdating:
			return false, nil // EKS would answer ResourceInUseException: let it settle
		case ekstypes.NodegroupStatusDeleting:
			deleting = true
			return false, nil
		case ekstypes.NodegroupStatusDeleteFailed:
			if deleting {
				return false, &NodeGroupFailedError{ClusterName: cluster, Name: name, Status: g.Status, Health: g.Health}
			}
		}
		_, err = c.eks.DeleteNodegroup(ctx, &awseks.DeleteNodegroupInput{ClusterName: aws.String(cluster), NodegroupName: aws.String(name)})
		switch apiErrorCode(err) {
		case "":
			deleting = true
			return false, nil
		case "ResourceNotFoundException":
			return true, nil
		case "ResourceInUseException":
			return false, nil // an update began between our look and the delete: wait it out
		}
		return false, fmt.Errorf("deleting %s: %w", what, err)
	})
}
