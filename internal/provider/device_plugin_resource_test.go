package provider

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

const devicePluginAddress = "gpu_device_plugin.test"

// devicePluginTestNodes registers nodes of their own for one test, labeled
// gpu-test=<label> and without GPU capacity, as before a device plugin
// runs, and deletes them when the test ends: the rest of the fleet, which
// the inventory tests count, never runs the plugin. They carry the labels
// GFD and NFD write (k8s.NodeSpec.GFDLabeled), as in a cluster whose GPU
// Operator runs both: the tests that use them are about the plugin.
func devicePluginTestNodes(t *testing.T, label string, nodes map[string]string) {
	t.Helper()
	addDevicePluginTestNodes(t, label, nodes, true)
}

// bareDevicePluginTestNodes are devicePluginTestNodes as EKS registers
// them: no GPU label at all, only their instance type.
func bareDevicePluginTestNodes(t *testing.T, label string, nodes map[string]string) {
	t.Helper()
	addDevicePluginTestNodes(t, label, nodes, false)
}

func addDevicePluginTestNodes(t *testing.T, label string, nodes map[string]string, gfdLabeled bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var names []string
	for name, instanceType := range nodes {
		profile, ok := ec2catalog.Lookup(instanceType)
		require.True(t, ok, instanceType)
		require.NoError(t, cluster.AddNode(ctx, k8s.NodeSpec{
			Name: name, InstanceType: profile, WithoutGPUCapacity: true, GFDLabeled: gfdLabeled,
			ExtraLabels: map[string]string{"gpu-test": label},
		}))
		names = append(names, name)
		t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), name)) })
	}
	require.NoError(t, cluster.WaitForNodesReady(ctx, names...))
}

// nodeAllocatable is what node has allocatable of resource now.
func nodeAllocatable(t *testing.T, node string, resource corev1.ResourceName) int64 {
	t.Helper()
	n, err := cluster.Client().CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	q := n.Status.Allocatable[resource]
	return q.Value()
}

func testAccDevicePluginConfig(namespace, label, body string) string {
	return providerConfig() + fmt.Sprintf(`
resource "gpu_device_plugin" "test" {
  namespace     = %q
  node_selector = { "gpu-test" = %q }
%s
}
`, namespace, label, body)
}

func TestAccDevicePlugin_makesGPUsAllocatable(t *testing.T) {
	testAccPreCheck(t)
	devicePluginTestNodes(t, "alloc", map[string]string{"dp-alloc-g5-0": "g5.xlarge", "dp-alloc-p4d-0": "p4d.24xlarge"})
	for _, node := range []string{"dp-alloc-g5-0", "dp-alloc-p4d-0"} {
		require.Zero(t, nodeAllocatable(t, node, gpulabels.ResourceName), "%s has allocatable GPUs before the plugin runs", node)
	}
	config := testAccDevicePluginConfig("dp-alloc", "alloc", `
  config {
    fail_on_init_error = false
  }
  runtime_class {}
  gpu_feature_discovery {}
  dcgm_exporter {}
`)
	var started time.Time
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDevicePluginDestroyed("dp-alloc", "nvidia-device-plugin", true),
		Steps: []resource.TestStep{
			// Create and Read
			{
				PreConfig: func() { started = time.Now() },
				Config:    config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("id"), knownvalue.StringExact("dp-alloc/nvidia-device-plugin")),
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(9)),
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("desired_nodes"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("ready_nodes"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("resource_name"), knownvalue.StringExact("nvidia.com/gpu")),
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("image"), knownvalue.StringExact(kube.DefaultDevicePluginImage)),
				},
				Check: func(*terraform.State) error {
					t.Logf("terraform apply to allocatable GPUs (init, plan, apply, refresh): %s", time.Since(started).Round(time.Millisecond))
					require.EqualValues(t, 1, nodeAllocatable(t, "dp-alloc-g5-0", gpulabels.ResourceName))
					require.EqualValues(t, 8, nodeAllocatable(t, "dp-alloc-p4d-0", gpulabels.ResourceName))
					ctx := context.Background()
					client := cluster.Client()
					for _, name := range []string{"nvidia-device-plugin", "nvidia-device-plugin-gfd", "nvidia-device-plugin-dcgm-exporter"} {
						_, err := client.AppsV1().DaemonSets("dp-alloc").Get(ctx, name, metav1.GetOptions{})
						require.NoError(t, err, "DaemonSet %s", name)
					}
					_, err := client.CoreV1().Services("dp-alloc").Get(ctx, "nvidia-device-plugin-dcgm-exporter", metav1.GetOptions{})
					require.NoError(t, err)
					rc, err := client.NodeV1().RuntimeClasses().Get(ctx, "nvidia", metav1.GetOptions{})
					require.NoError(t, err)
					require.Equal(t, "nvidia", rc.Handler)
					return nil
				},
			},
			// ImportState
			{
				ResourceName:            devicePluginAddress,
				ImportState:             true,
				ImportStateId:           "dp-alloc/nvidia-device-plugin",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
		},
	})
}

func TestAccDevicePlugin_timeSlicing(t *testing.T) {
	testAccPreCheck(t)
	devicePluginTestNodes(t, "slicing", map[string]string{"dp-slicing-g5-0": "g5.xlarge"})
	sliced := func(replicas int, rename bool) string {
		return testAccDevicePluginConfig("dp-slicing", "slicing", fmt.Sprintf(`
  config {
    time_slicing {
      rename_by_default = %t
      resource {
        name     = "nvidia.com/gpu"
        replicas = %d
      }
    }
  }
`, rename, replicas))
	}
	var firstHash string
	configHash := func() string {
		ds, err := cluster.Client().AppsV1().DaemonSets("dp-slicing").Get(context.Background(), "nvidia-device-plugin", metav1.GetOptions{})
		require.NoError(t, err)
		return ds.Spec.Template.Annotations[kube.AnnotationConfigHash]
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDevicePluginDestroyed("dp-slicing", "nvidia-device-plugin", true),
		Steps: []resource.TestStep{
			// Create and Read: one A10G shared 4 ways.
			{
				Config: sliced(4, false),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("resource_name"), knownvalue.StringExact("nvidia.com/gpu")),
				},
				Check: func(*terraform.State) error {
					require.EqualValues(t, 4, nodeAllocatable(t, "dp-slicing-g5-0", gpulabels.ResourceName))
					firstHash = configHash()
					require.NotEmpty(t, firstHash)
					return nil
				},
			},
			// Update and Read: renamed to the shared resource; the new config rolls the pods.
			{
				Config: sliced(2, true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(devicePluginAddress, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("resource_name"), knownvalue.StringExact("nvidia.com/gpu.shared")),
				},
				Check: func(*terraform.State) error {
					require.EqualValues(t, 2, nodeAllocatable(t, "dp-slicing-g5-0", gpulabels.ResourceName+".shared"))
					require.Zero(t, nodeAllocatable(t, "dp-slicing-g5-0", gpulabels.ResourceName), "the unshared resource is gone")
					require.NotEqual(t, firstHash, configHash(), "a config change changes the pod template")
					return nil
				},
			},
			// ImportState
			{
				ResourceName:            devicePluginAddress,
				ImportState:             true,
				ImportStateId:           "dp-slicing/nvidia-device-plugin",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
		},
	})
}

func TestAccDevicePlugin_drift(t *testing.T) {
	testAccPreCheck(t)
	devicePluginTestNodes(t, "drift", map[string]string{"dp-drift-g4dn-0": "g4dn.xlarge"})
	namespace := testNamespace(t, "dp-drift")
	config := testAccDevicePluginConfig(namespace, "drift", "")
	daemonSets := cluster.Client().AppsV1().DaemonSets(namespace)
	configMaps := cluster.Client().CoreV1().ConfigMaps(namespace)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDevicePluginDestroyed(namespace, "nvidia-device-plugin", false),
		Steps: []resource.TestStep{
			// Create and Read
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(1)),
				},
			},
			// The DaemonSet deleted out of band, its ConfigMap left: the
			// plan puts it back (an update: the rest of the deployment is
			// there, and a create would stop at it).
			{
				PreConfig: func() {
					ctx := context.Background()
					require.NoError(t, daemonSets.Delete(ctx, "nvidia-device-plugin", metav1.DeleteOptions{}))
					require.NoError(t, kube.WaitForDaemonSetGone(ctx, cluster.Client(), namespace, "nvidia-device-plugin"))
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(devicePluginAddress, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(1)),
				},
			},
			// The image edited out of band: the plan updates it back.
			{
				PreConfig: func() {
					patch := `{"spec":{"template":{"spec":{"containers":[{"name":"nvidia-device-plugin-ctr","image":"nvcr.io/nvidia/k8s-device-plugin:v0.14.0"}]}}}}`
					_, err := daemonSets.Patch(context.Background(), "nvidia-device-plugin", k8stypes.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"})
					require.NoError(t, err)
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(devicePluginAddress, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("image"), knownvalue.StringExact(kube.DefaultDevicePluginImage)),
				}},
				Check: func(*terraform.State) error {
					ds, err := daemonSets.Get(context.Background(), "nvidia-device-plugin", metav1.GetOptions{})
					require.NoError(t, err)
					require.Equal(t, kube.DefaultDevicePluginImage, ds.Spec.Template.Spec.Containers[0].Image)
					return nil
				},
			},
			// The config file overwritten out of band: the plan writes it again.
			{
				PreConfig: func() {
					patch := `{"data":{"config.yaml":"version: v1\nsharing: [oops"}}`
					_, err := configMaps.Patch(context.Background(), "nvidia-device-plugin-config", k8stypes.MergePatchType, []byte(patch), metav1.PatchOptions{})
					require.NoError(t, err)
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(devicePluginAddress, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					cm, err := configMaps.Get(context.Background(), "nvidia-device-plugin-config", metav1.GetOptions{})
					require.NoError(t, err)
					_, err = kube.ParseDevicePluginConfig([]byte(cm.Data["config.yaml"]))
					require.NoError(t, err)
					return nil
				},
			},
		},
	})
}

// testAccDevicePluginDestroyed checks that destroy removed the DaemonSets,
// and the namespace when the resource created it.
func testAccDevicePluginDestroyed(namespace, name string, namespaceGone bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		client := cluster.Client()
		for _, ds := range []string{name, name + "-gfd", name + "-dcgm-exporter", name + "-mps-control-daemon", name + "-health-agent"} {
			if _, err := client.AppsV1().DaemonSets(namespace).Get(ctx, ds, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("DaemonSet %s/%s still exists (err %v)", namespace, ds, err)
			}
		}
		_, err := client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
		if namespaceGone && !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s, which the resource created, still exists (err %v)", namespace, err)
		}
		if !namespaceGone && err != nil {
			return fmt.Errorf("namespace %s, which existed before, was deleted: %v", namespace, err)
		}
		return nil
	}
}

func TestAccDevicePlugin_serviceMonitor(t *testing.T) {
	testAccPreCheck(t)
	devicePluginTestNodes(t, "monitor", map[string]string{"dp-monitor-g4dn-0": "g4dn.xlarge"})
	config := testAccDevicePluginConfig("dp-monitor", "monitor", `
  dcgm_exporter {
    port            = 9500
    service_monitor = true
  }
`)
	serviceMonitor := "/apis/monitoring.coreos.com/v1/namespaces/dp-monitor/servicemonitors/nvidia-device-plugin-dcgm-exporter"
	rest := cluster.Client().Discovery().RESTClient()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(s *terraform.State) error {
			if err := testAccDevicePluginDestroyed("dp-monitor", "nvidia-device-plugin", true)(s); err != nil {
				return err
			}
			if err := rest.Get().AbsPath(serviceMonitor).Do(context.Background()).Error(); !apierrors.IsNotFound(err) {
				return fmt.Errorf("ServiceMonitor still exists (err %v)", err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			// Create and Read: without the CRD the apply warns and makes none.
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("dcgm_exporter").AtMapKey("service_monitor"), knownvalue.Bool(true)),
				},
				Check: func(*terraform.State) error {
					svc, err := cluster.Client().CoreV1().Services("dp-monitor").Get(context.Background(), "nvidia-device-plugin-dcgm-exporter", metav1.GetOptions{})
					require.NoError(t, err)
					require.EqualValues(t, 9500, svc.Spec.Ports[0].Port)
					return nil
				},
			},
			// Once the Prometheus Operator's CRD exists, the next apply makes the ServiceMonitor.
			{
				PreConfig: func() { installServiceMonitorCRD(t) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(devicePluginAddress, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					require.NoError(t, rest.Get().AbsPath(serviceMonitor).Do(context.Background()).Error())
					return nil
				},
			},
			// ImportState
			{
				ResourceName:            devicePluginAddress,
				ImportState:             true,
				ImportStateId:           "dp-monitor/nvidia-device-plugin",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
		},
	})
}

// installServiceMonitorCRD installs a minimal ServiceMonitor CRD (schema
// left open) until the test ends, and waits until the API serves it.
func installServiceMonitorCRD(t *testing.T) {
	t.Helper()
	const crd = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"servicemonitors.monitoring.coreos.com"},
"spec":{"group":"monitoring.coreos.com","scope":"Namespaced",
"names":{"plural":"servicemonitors","singular":"servicemonitor","kind":"ServiceMonitor","listKind":"ServiceMonitorList"},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	const path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := cluster.Client()
	require.NoError(t, client.Discovery().RESTClient().Post().AbsPath(path).SetHeader("Content-Type", "application/json").Body([]byte(crd)).Do(ctx).Error())
	t.Cleanup(func() {
		_ = client.Discovery().RESTClient().Delete().AbsPath(path, "servicemonitors.monitoring.coreos.com").Do(context.Background()).Error()
	})
	require.NoError(t, wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		resources, err := client.Discovery().ServerResourcesForGroupVersion("monitoring.coreos.com/v1")
		return err == nil && len(resources.APIResources) > 0, nil
	}), "the ServiceMonitor CRD is not served")
}

func TestAccDevicePlugin_updateInPlace(t *testing.T) {
	testAccPreCheck(t)
	devicePluginTestNodes(t, "update", map[string]string{"dp-update-g4dn-0": "g4dn.xlarge", "dp-update-g4dn-1": "g4dn.xlarge"})
	first := testAccDevicePluginConfig("dp-update", "update", `
  gpu_feature_discovery {}
  dcgm_exporter {}
`)
	// Under OnDelete Kubernetes keeps no max_unavailable, and an import
	// reads quantities as the API server writes them.
	second := func(strategy, maxUnavailable, memory string) string {
		return testAccDevicePluginConfig("dp-update", "update", fmt.Sprintf(`
  image_pull_policy   = "Always"
  priority_class_name = ""
  gpu_node_affinity   = false
  tolerations         = [{ operator = "Exists" }]
  update_strategy     = %q
  max_unavailable     = %q
  resources = {
    requests = { cpu = "50m", memory = %q }
    limits   = { memory = "1Gi" }
  }
  config {
    mps {
      resource {
        replicas = 2
      }
    }
  }
  dcgm_exporter {
    port = 9500
  }
`, strategy, maxUnavailable, memory))
	}
	ctx := context.Background()
	client := cluster.Client()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDevicePluginDestroyed("dp-update", "nvidia-device-plugin", true),
		Steps: []resource.TestStep{
			// Create and Read
			{
				Config: first,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(2)),
				},
			},
			// Update and Read: every setting changes in place; GFD goes, the MPS daemon comes.
			{
				Config: second("RollingUpdate", "50%", "0.5Gi"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(devicePluginAddress, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("resources").AtMapKey("requests").AtMapKey("memory"), knownvalue.StringExact("0.5Gi")),
				},
				Check: func(*terraform.State) error {
					_, err := client.AppsV1().DaemonSets("dp-update").Get(ctx, "nvidia-device-plugin-gfd", metav1.GetOptions{})
					require.True(t, apierrors.IsNotFound(err), "GFD was removed (err %v)", err)
					_, err = client.AppsV1().DaemonSets("dp-update").Get(ctx, "nvidia-device-plugin-mps-control-daemon", metav1.GetOptions{})
					require.NoError(t, err)
					svc, err := client.CoreV1().Services("dp-update").Get(ctx, "nvidia-device-plugin-dcgm-exporter", metav1.GetOptions{})
					require.NoError(t, err)
					require.EqualValues(t, 9500, svc.Spec.Ports[0].Port)
					ds, err := client.AppsV1().DaemonSets("dp-update").Get(ctx, "nvidia-device-plugin", metav1.GetOptions{})
					require.NoError(t, err)
					require.Nil(t, ds.Spec.Template.Spec.Affinity)
					require.Equal(t, "50%", ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable.String())
					return nil
				},
			},
			// Update and Read: OnDelete leaves the running pods alone and does not wait for them to change.
			{
				Config: second("OnDelete", "1", "64Mi"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("update_strategy"), knownvalue.StringExact("OnDelete")),
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(4)),
				},
			},
			// ImportState
			{
				ResourceName:            devicePluginAddress,
				ImportState:             true,
				ImportStateId:           "dp-update/nvidia-device-plugin",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
		},
	})
}
