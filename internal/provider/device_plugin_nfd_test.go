package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// nodeLabels are node's labels now.
func nodeLabels(t *testing.T, node string) map[string]string {
	t.Helper()
	n, err := cluster.Client().CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	return n.Labels
}

// The README's first example on a cluster that has nothing but what the
// provider deploys: GFD's labels reach the nodes only through the Node
// Feature Discovery deployed with it, and a workload that selects a
// product then runs.
func TestAccDevicePlugin_GFDLabelsFreshNodesThroughNodeFeatureDiscovery(t *testing.T) {
	testAccPreCheck(t)
	bareDevicePluginTestNodes(t, "nfd", map[string]string{"dp-nfd-g5-0": "g5.xlarge", "dp-nfd-g4dn-0": "g4dn.xlarge"})
	require.NotContains(t, nodeLabels(t, "dp-nfd-g5-0"), gpulabels.Product, "a fresh node has no GFD label")
	require.NotContains(t, nodeLabels(t, "dp-nfd-g5-0"), gpulabels.NFDPCIPresent, "a fresh node has no NFD label")
	work := testNamespace(t, "dp-nfd-work")
	config := testAccDevicePluginConfig("dp-nfd", "nfd", `
  gpu_feature_discovery {}
`) + fmt.Sprintf(`
resource "gpu_workload" "train" {
  kind = "job"
  metadata {
    name      = "train"
    namespace = %q
  }
  container {
    image = "nvcr.io/nvidia/pytorch:24.05-py3"
  }
  gpu {
    count    = 1
    products = ["NVIDIA-A10G"]
  }
  node_selector = { "gpu-test" = "nfd" }
  depends_on    = [gpu_device_plugin.test]
}
`, work)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDevicePluginDestroyed("dp-nfd", "nvidia-device-plugin", true),
		Steps: []resource.TestStep{
			// Create and Read
			{
				Config: config,
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(devicePluginAddress, "gpu_feature_discovery.deploy_node_feature_discovery", "true"),
					resource.TestCheckResourceAttr(devicePluginAddress, "allocatable_gpus", "2"),
					resource.TestCheckResourceAttr("gpu_workload.train", "status", "Complete"),
					resource.TestCheckResourceAttr("gpu_workload.train", "node_names.0", "dp-nfd-g5-0"),
					func(*terraform.State) error {
						g5 := nodeLabels(t, "dp-nfd-g5-0")
						require.Equal(t, "NVIDIA-A10G", g5[gpulabels.Product])
						require.Equal(t, "true", g5[gpulabels.NFDPCIPresent])
						require.Equal(t, "Tesla-T4", nodeLabels(t, "dp-nfd-g4dn-0")[gpulabels.Product])
						ctx := context.Background()
						client := cluster.Client()
						_, err := client.AppsV1().Deployments("dp-nfd").Get(ctx, "nvidia-device-plugin-nfd-master", metav1.GetOptions{})
						require.NoError(t, err)
						_, err = client.AppsV1().DaemonSets("dp-nfd").Get(ctx, "nvidia-device-plugin-nfd-worker", metav1.GetOptions{})
						require.NoError(t, err)
						_, err = client.RbacV1().ClusterRoles().Get(ctx, "dp-nfd:nvidia-device-plugin-nfd-master", metav1.GetOptions{})
						require.NoError(t, err)
						return nil
					},
				),
			},
			// ImportState
			{
				ResourceName:            devicePluginAddress,
				ImportState:             true,
				ImportStateId:           "dp-nfd/nvidia-device-plugin",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
		},
	})
	_, err := cluster.Client().RbacV1().ClusterRoles().Get(context.Background(), "dp-nfd:nvidia-device-plugin-nfd-master", metav1.GetOptions{})
	require.Error(t, err, "the destroy removes NFD's cluster-wide RBAC too")
}

// Without NFD, GFD runs and no label ever comes: the wait says so.
func TestAccDevicePlugin_GFDWithoutNodeFeatureDiscoverySaysSo(t *testing.T) {
	testAccPreCheck(t)
	bareDevicePluginTestNodes(t, "nonfd", map[string]string{"dp-nonfd-g5-0": "g5.xlarge"})
	config := testAccDevicePluginConfig("dp-nonfd", "nonfd", `
  gpu_node_affinity = false
  gpu_feature_discovery {
    deploy_node_feature_discovery = false
  }
  timeouts {
    create = "20s"
  }
`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDevicePluginDestroyed("dp-nonfd", "nvidia-device-plugin", true),
		Steps: []resource.TestStep{{
			Config: config,
			ExpectError: wrapped("1 of 1 nodes running GPU Feature Discovery have none of its labels (dp-nonfd-g5-0)",
				"only Node Feature Discovery turns them into node labels",
				"set gpu_feature_discovery.deploy_node_feature_discovery = true"),
		}},
	})
	require.NotContains(t, nodeLabels(t, "dp-nonfd-g5-0"), gpulabels.Product)
}
