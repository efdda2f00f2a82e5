package eks

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/awsemu"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// emu is the testbed's AWS emulator, whose EKS cluster's API server is
// kubeCluster's; both are real servers the SDK's clients talk to over HTTP.
var (
	emu         *awsemu.Emulator
	kubeCluster *k8s.Cluster
)

func TestMain(m *testing.M) {
	emu, kubeCluster = awsemu.NewWithCluster(awsemu.Options{}, k8s.Options{})
	os.Exit(testbed.Main(m, testbed.Options{Backends: []testbed.Backend{emu, kubeCluster}}, func(*testbed.Testbed) {
		for k, v := range emu.Env() {
			_ = os.Setenv(k, v)
		}
	}))
}

// testbedClient connects to the emulator as the provider would: endpoints,
// region and credentials from the environment Env gives.
func testbedClient(t *testing.T) *Client {
	t.Helper()
	testbed.SkipIfUnavailable(t)
	c, err := Settings{UserAgent: "terraform-provider-gpu-test"}.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var nodeGroupCount atomic.Int64

// uniqueName is a node group name no other test uses.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nodeGroupCount.Add(1))
}

// gpuSpec is a small GPU node group of the emulator's cluster.
func gpuSpec(name string) NodeGroupSpec {
	return NodeGroupSpec{
		ClusterName:   emu.ClusterName(),
		Name:          name,
		NodeRoleARN:   "arn:aws:iam::" + awsemu.AccountID + ":role/eks-gpu-nodes",
		SubnetIDs:     []string{"subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002"},
		InstanceTypes: []string{"g5.xlarge"},
		AMIType:       "BOTTLEROCKET_x86_64_NVIDIA",
		CapacityType:  "ON_DEMAND",
		Scaling:       Scaling{Min: 0, Max: 2, Desired: 1},
		Labels:        map[string]string{"team": "ml"},
		Taints:        []Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: "NO_SCHEDULE"}},
		Tags:          map[string]string{"owner": "eks-test"},
	}
}
