package eks

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
)

// ClusterAccess is what a Kubernetes client needs to reach an EKS cluster
// without a kubeconfig or CLI: its API server endpoint, the CA that signs the
// endpoint's certificate, and a source of bearer tokens.
type ClusterAccess struct {
	Endpoint string
	CAPEM    []byte
	Tokens   *TokenSource
}

// ClusterAccess describes the named cluster (DescribeCluster) for its
// endpoint and CA, and pairs them with a TokenSource for it.
func (c *Client) ClusterAccess(ctx context.Context, clusterName string) (ClusterAccess, error) {
	out, err := c.eks.DescribeCluster(ctx, &awseks.DescribeClusterInput{Name: aws.String(clusterName)})
	if err != nil {
		return ClusterAccess{}, fmt.Errorf("describing EKS cluster %q: %w", clusterName, err)
	}
	cl := out.Cluster
	if cl == nil || aws.ToString(cl.Endpoint) == "" {
		status := ""
		if cl != nil {
			status = string(cl.Status)
		}
		return ClusterAccess{}, fmt.Errorf("EKS cluster %q has no API server endpoint yet (status %s): wait until it is ACTIVE", clusterName, status)
	}
	if cl.CertificateAuthority == nil || aws.ToString(cl.CertificateAuthority.Data) == "" {
		return ClusterAccess{}, fmt.Errorf("EKS cluster %q reports no certificate authority data", clusterName)
	}
	ca, err := base64.StdEncoding.DecodeString(aws.ToString(cl.CertificateAuthority.Data))
	if err != nil {
		return ClusterAccess{}, fmt.Errorf("EKS cluster %q: decoding its certificate authority data (base64 PEM): %w", clusterName, err)
	}
	return ClusterAccess{Endpoint: aws.ToString(cl.Endpoint), CAPEM: ca, Tokens: c.newTokenSource(clusterName)}, nil
}
