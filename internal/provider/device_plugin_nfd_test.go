package provider

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// nodeLabels are node's labels now.
func nodeLabels(t *testing.T, node string) map[string]string {
	t.Helper()
	n, err := cluster.Client().CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	return n.Labels
}

// a10gTrainingJob is the README's first workload, cut to one A10G on the
// nodes labeled gpu-test=<label>, after dependsOn.
func a10gTrainingJob(namespace, label, dependsOn string) string {
	return fmt.Sprintf(`
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
  node_selector = { "gpu-test" = %q }
  depends_on    = [%s]
}
`, namespace, label, dependsOn)
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
`) + a10gTrainingJob(work, "nfd", "gpu_device_plugin.test")
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
			// The plan warns; the apply then waits for labels that never come.
			Config: config,
			ExpectError: wrapped("1 of 1 nodes running GPU Feature Discovery have none of its labels (dp-nonfd-g5-0)",
				"only Node Feature Discovery turns them into node labels",
				"set gpu_feature_discovery.deploy_node_feature_discovery = true"),
		}},
	})
	require.NotContains(t, nodeLabels(t, "dp-nonfd-g5-0"), gpulabels.Product)
}

// setNodeFeatureAPI makes the cluster serve NFD's NodeFeature API, or not,
// and waits until discovery says so.
func setNodeFeatureAPI(t *testing.T, served bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rest := cluster.Client().Discovery().RESTClient()
	if served {
		crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"nodefeatures.nfd.k8s-sigs.io"},
"spec":{"group":"nfd.k8s-sigs.io","scope":"Namespaced","names":{"kind":"NodeFeature","listKind":"NodeFeatureList","plural":"nodefeatures","singular":"nodefeature"},
"versions":[{"name":"v1alpha1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
		err := rest.Post().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions").SetHeader("Content-Type", "application/json").Body([]byte(crd)).Do(ctx).Error()
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	} else {
		for _, name := range kube.NFDCRDNames() {
			err := rest.Delete().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", name).Do(ctx).Error()
			if !apierrors.IsNotFound(err) {
				require.NoError(t, err)
			}
		}
	}
	require.NoError(t, wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		installed, err := kubeCluster(t).NodeFeatureDiscoveryInstalled(ctx)
		return err == nil && installed == served, nil
	}), "discovery does not say NodeFeature is served = %t", served)
}

func TestAccDevicePlugin_planWarnsWhenGFDWouldRunWithoutNodeFeatureDiscovery(t *testing.T) {
	testAccPreCheck(t)
	config := testAccDevicePluginConfig("dp-plan-nonfd", "plan-nonfd", `
  gpu_feature_discovery {
    deploy_node_feature_discovery = false
  }
`)
	const summary = "The cluster runs no Node Feature Discovery"
	setNodeFeatureAPI(t, false)
	found := warnings(terraformPlan(t, config), summary)
	require.Len(t, found, 1)
	require.Contains(t, found[0].Detail, "Remove deploy_node_feature_discovery = false")
	require.Contains(t, found[0].Snippet.Code, "deploy_node_feature_discovery")

	setNodeFeatureAPI(t, true)
	t.Cleanup(func() { setNodeFeatureAPI(t, false) })
	require.Empty(t, warnings(terraformPlan(t, config), summary), "a cluster with NFD gets no warning")
}

// kubeCluster is the backend's view of the testbed cluster.
func kubeCluster(t *testing.T) *kube.Cluster {
	t.Helper()
	c, err := kube.Connect(cluster.RESTConfig(), kube.ClusterOptions{})
	require.NoError(t, err)
	return c
}
