package eks

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
)

// ClusterVersion is the Kubernetes version ("1.33") of the named cluster
// (DescribeCluster).
func (c *Client) ClusterVersion(ctx context.Context, clusterName string) (string, error) {
	out, err := c.eks.DescribeCluster(ctx, &awseks.DescribeClusterInput{Name: aws.String(clusterName)})
	if err != nil {
		return "", fmt.Errorf("describing EKS cluster %q: %w", clusterName, err)
	}
	if out.Cluster == nil {
		return "", fmt.Errorf("describing EKS cluster %q: no cluster in the answer", clusterName)
	}
	return aws.ToString(out.Cluster.Version), nil
}
