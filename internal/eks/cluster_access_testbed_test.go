package eks

// A token from ClusterAccess's TokenSource authenticates to the EKS
// cluster's real kube-apiserver (through the emulator's token webhook,
// which checks the presigned GetCallerIdentity as EKS does), with the
// endpoint and CA DescribeCluster gives, through internal/kube.

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

func TestClusterAccessTokenAuthenticatesToTheAPIServer(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	access, err := c.ClusterAccess(ctx, emu.ClusterName())
	require.NoError(t, err)
	require.Equal(t, kubeCluster.APIServerURL(), access.Endpoint)
	require.Contains(t, string(access.CAPEM), "-----BEGIN CERTIFICATE-----")

	conn, err := kube.ConnectionSettings{Host: access.Endpoint, ClusterCACertificate: string(access.CAPEM), TokenSource: access.Tokens}.
		Resolve(func(string) string { return "" })
	require.NoError(t, err)
	cluster, err := conn.Connect(kube.ClusterOptions{})
	require.NoError(t, err)
	_, err = cluster.ReadNodeGroupNodes(ctx, map[string]string{"eks.amazonaws.com/nodegroup": "none"})
	require.NoError(t, err, "the EKS token is accepted and its identity may list nodes")
}

func TestClusterAccessOfAnUnknownClusterSaysSo(t *testing.T) {
	c := testbedClient(t)
	_, err := c.ClusterAccess(testContext(t), "no-such-cluster")
	require.ErrorContains(t, err, `describing EKS cluster "no-such-cluster"`)
	require.ErrorContains(t, err, "ResourceNotFoundException")
}

func TestClusterAccessTokenForAnotherClusterIsRejected(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	access, err := c.ClusterAccess(ctx, emu.ClusterName())
	require.NoError(t, err)
	other := c.newTokenSource("another-cluster")

	conn, err := kube.ConnectionSettings{Host: access.Endpoint, ClusterCACertificate: string(access.CAPEM), TokenSource: other}.
		Resolve(func(string) string { return "" })
	require.NoError(t, err)
	cluster, err := conn.Connect(kube.ClusterOptions{})
	require.NoError(t, err)
	_, err = cluster.ReadNodeGroupNodes(ctx, map[string]string{"eks.amazonaws.com/nodegroup": "none"})
	require.ErrorContains(t, err, "rejected the credentials (HTTP 401 Unauthorized)", "a token is bound to the cluster named in its signed x-k8s-aws-id header")
	require.ErrorContains(t, err, `in use: EKS token for cluster "another-cluster" in `+emu.Region())
}
