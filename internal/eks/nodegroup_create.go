package eks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/poll"
)

// CreateNodeGroup creates the node group with the given client request token
// (so a retried create is the same create, not a second one) and waits, with
// backoff bounded by ctx, until EKS says ACTIVE.
//
// When the group ends CREATE_FAILED or DEGRADED it returns the NodeGroup it
// saw and a *NodeGroupFailedError. When ctx ends while EKS's answer to the
// create is on its way, it returns the group EKS created, if it did, with
// ctx's error. Otherwise an error before EKS accepted the create returns a
// zero NodeGroup: there is nothing to keep in state.
func (c *Client) CreateNodeGroup(ctx context.Context, spec NodeGroupSpec, clientRequestToken string) (NodeGroup, error) {
	in := createNodegroupInput(spec)
	in.ClientRequestToken = aws.String(clientRequestToken)
	sent := time.Now()
	out, err := c.eks.CreateNodegroup(ctx, in)
	if err != nil {
		err = fmt.Errorf("creating EKS node group (%s:%s): %w", spec.ClusterName, spec.Name, err)
		return c.createdUnanswered(ctx, spec, sent, err), err
	}
	created := nodeGroupFromEKS(out.Nodegroup)
	return c.waitNodeGroupActive(ctx, spec.ClusterName, spec.Name, created)
}

// unansweredCreateLookup bounds the look for a group whose create got no
// answer.
const unansweredCreateLookup = time.Minute

// createdUnanswered is the group a CreateNodegroup that got no answer (err:
// ctx ended, or the connection failed, after the request may have reached
// EKS) created anyway, or a zero NodeGroup. It looks under a context freed
// of ctx's end, which may be what cut the answer short. A group of that
// name is this create's only when it has spec's role, subnets and instance
// types and was created after the request was sent (less the clock skew
// SigV4 allows): a group that was there before is never taken for it.
func (c *Client) createdUnanswered(ctx context.Context, spec NodeGroupSpec, sent time.Time, err error) NodeGroup {
	var unavailable *credentialsUnavailableError
	if apiErrorCode(err) != "" || errors.As(err, &unavailable) {
		return NodeGroup{} // EKS answered, or nothing was sent
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unansweredCreateLookup)
	defer cancel()
	g, found, readErr := c.ReadNodeGroup(ctx, spec.ClusterName, spec.Name)
	if readErr != nil || !found {
		return NodeGroup{}
	}
	ours := g.NodeRoleARN == spec.NodeRoleARN &&
		slices.Equal(slices.Sorted(slices.Values(g.SubnetIDs)), slices.Sorted(slices.Values(spec.SubnetIDs))) &&
		(len(spec.InstanceTypes) == 0 || slices.Equal(g.InstanceTypes, spec.InstanceTypes)) &&
		!g.CreatedAt.Before(sent.Add(-sigV4ClockSkew))
	if !ours {
		return NodeGroup{}
	}
	return g
}

// sigV4ClockSkew is how far AWS lets a request's signing time be from its
// own clock: this machine's clock and EKS's may differ by as much.
const sigV4ClockSkew = 15 * time.Minute

// waitNodeGroupActive polls DescribeNodegroup until the group is ACTIVE (the
// group is returned) or has failed (the group and a *NodeGroupFailedError).
// last is returned with ctx's error when the wait runs out.
func (c *Client) waitNodeGroupActive(ctx context.Context, cluster, name string, last NodeGroup) (NodeGroup, error) {
	err := poll.Until(ctx, waitLog, fmt.Sprintf("EKS node group (%s:%s) to become ACTIVE", cluster, name), checkAfterRequest,
		func(ctx context.Context) (bool, error) {
			g, found, err := c.ReadNodeGroup(ctx, cluster, name)
			if err != nil {
				return false, err
			}
			if !found {
				return false, &NodeGroupGoneError{ClusterName: cluster, Name: name, While: "waiting for it to become ACTIVE"}
			}
			last = g
			switch ekstypes.NodegroupStatus(g.Status) {
			case ekstypes.NodegroupStatusActive:
				return true, nil
			case ekstypes.NodegroupStatusCreateFailed, ekstypes.NodegroupStatusDegraded, ekstypes.NodegroupStatusDeleteFailed, ekstypes.NodegroupStatusDeleting:
				return false, &NodeGroupFailedError{ClusterName: cluster, Name: name, Status: g.Status, Health: g.Health}
			}
			return false, nil
		})
	var failed *NodeGroupFailedError
	if err != nil && !errors.As(err, &failed) && last.Status != "" {
		err = fmt.Errorf("%w (last status %s)", err, last.Status)
	}
	return last, err
}

func createNodegroupInput(s NodeGroupSpec) *awseks.CreateNodegroupInput {
	in := &awseks.CreateNodegroupInput{
		ClusterName:   aws.String(s.ClusterName),
		NodegroupName: aws.String(s.Name),
		NodeRole:      aws.String(s.NodeRoleARN),
		Subnets:       s.SubnetIDs,
		InstanceTypes: s.InstanceTypes,
		ScalingConfig: &ekstypes.NodegroupScalingConfig{
			MinSize:     aws.Int32(s.Scaling.Min),
			MaxSize:     aws.Int32(s.Scaling.Max),
			DesiredSize: aws.Int32(s.Scaling.Desired),
		},
		UpdateConfig:     updateConfigToEKS(s.UpdateConfig),
		NodeRepairConfig: nodeRepairToEKS(s.NodeRepair),
		Labels:           s.Labels,
		Taints:           taintsToEKS(s.Taints),
		LaunchTemplate:   launchTemplateToEKS(s.LaunchTemplate),
		ReleaseVersion:   optionalString(s.ReleaseVersion),
		Version:          optionalString(s.Version),
		Tags:             s.Tags,
	}
	if s.AMIType != "" {
		in.AmiType = ekstypes.AMITypes(s.AMIType)
	}
	if s.CapacityType != "" {
		in.CapacityType = ekstypes.CapacityTypes(s.CapacityType)
	}
	if s.DiskSize > 0 {
		in.DiskSize = aws.Int32(s.DiskSize)
	}
	return in
}

func updateConfigToEKS(u *UpdateConfig) *ekstypes.NodegroupUpdateConfig {
	if u == nil {
		return nil
	}
	out := &ekstypes.NodegroupUpdateConfig{}
	if u.MaxUnavailable > 0 {
		out.MaxUnavailable = aws.Int32(u.MaxUnavailable)
	}
	if u.MaxUnavailablePercentage > 0 {
		out.MaxUnavailablePercentage = aws.Int32(u.MaxUnavailablePercentage)
	}
	out.UpdateStrategy = ekstypes.NodegroupUpdateStrategies(u.UpdateStrategy)
	if out.MaxUnavailable == nil && out.MaxUnavailablePercentage == nil && out.UpdateStrategy == "" {
		return nil
	}
	return out
}

func taintsToEKS(ts []Taint) []ekstypes.Taint {
	if len(ts) == 0 {
		return nil
	}
	out := make([]ekstypes.Taint, len(ts))
	for i, t := range ts {
		out[i] = ekstypes.Taint{Key: aws.String(t.Key), Value: optionalString(t.Value), Effect: ekstypes.TaintEffect(t.Effect)}
	}
	return out
}

// launchTemplateToEKS names the template by ID when it has one, else by
// name: EKS takes "either the launch template ID or name, but not both"
// (LaunchTemplateSpecification), and a node group EKS describes has both.
func launchTemplateToEKS(lt *LaunchTemplate) *ekstypes.LaunchTemplateSpecification {
	if lt == nil {
		return nil
	}
	spec := &ekstypes.LaunchTemplateSpecification{Version: optionalString(lt.Version)}
	if lt.ID != "" {
		spec.Id = aws.String(lt.ID)
	} else {
		spec.Name = optionalString(lt.Name)
	}
	return spec
}

func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}
