package provider

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
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
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

const draDriverAddress = "gpu_dra_driver.test"

// draTestNodes registers DRA nodes of their own for one test (the
// testbed's DRA simulator publishes their GPUs, or MIG devices, as
// NVIDIA's kubelet plugin would, once the plugin's pod runs there),
// labeled gpu-test=<label> and as NFD labels a GPU node, and deletes them
// when the test ends.
func draTestNodes(t *testing.T, label string, nodes ...k8s.NodeSpec) {
	t.Helper()
	ctx := context.Background()
	var names []string
	for _, node := range nodes {
		node.DRA = true
		// Node Feature Discovery's label for an NVIDIA PCI device, which
		// the chart's GPU node affinity selects on.
		node.ExtraLabels = map[string]string{"gpu-test": label, gpulabels.NFDPCIPresent: "true"}
		require.NoError(t, cluster.AddNode(ctx, node))
		names = append(names, node.Name)
		t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), node.Name)) })
	}
	require.NoError(t, cluster.WaitForNodesReady(ctx, names...))
}

func testAccDRADriverConfig(namespace, label, body string) string {
	return providerConfig() + fmt.Sprintf(`
resource "gpu_dra_driver" "test" {
  namespace     = %q
  node_selector = { "gpu-test" = %q }
%s
}
`, namespace, label, body)
}

// testAccDRADriverDestroyed checks that destroy removed the DaemonSet, the
// cluster-wide objects and, when the resource created it, the namespace.
func testAccDRADriverDestroyed(namespace string, namespaceGone bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		client := cluster.Client()
		spec := kube.DRADriverSpec{Namespace: namespace, Name: kube.DefaultDRADriverName}
		if _, err := client.AppsV1().DaemonSets(namespace).Get(ctx, spec.DaemonSetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("DaemonSet %s/%s still exists (err %v)", namespace, spec.DaemonSetName(), err)
		}
		if _, err := client.RbacV1().ClusterRoles().Get(ctx, spec.ClusterRoleName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ClusterRole %s still exists (err %v)", spec.ClusterRoleName(), err)
		}
		for _, class := range kube.DRADeviceClasses {
			if _, err := client.ResourceV1().DeviceClasses().Get(ctx, class, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("DeviceClass %s still exists (err %v)", class, err)
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

func TestAccDRADriver_publishesSlices(t *testing.T) {
	testAccPreCheck(t)
	// One whole A10G, and an A100 node whose eight GPUs are each split
	// into two MIG devices: 1 + 16 devices.
	draTestNodes(t, "dra-life", k8s.NodeSpec{Name: "dra-life-g5-0", InstanceType: instanceType(t, "g5.xlarge")},
		k8s.NodeSpec{Name: "dra-life-p4d-0", InstanceType: instanceType(t, "p4d.24xlarge"), MIGDevices: []string{"3g.20gb", "3g.20gb"}})
	config := func(body string) string { return testAccDRADriverConfig("dra-life", "dra-life", body) }
	daemonSets := cluster.Client().AppsV1().DaemonSets("dra-life")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDRADriverDestroyed("dra-life", true),
		Steps: []resource.TestStep{
			// Create and Read
			{
				Config: config(""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(draDriverAddress, tfjsonpath.New("id"), knownvalue.StringExact("dra-life/nvidia-dra-driver-gpu")),
					statecheck.ExpectKnownValue(draDriverAddress, tfjsonpath.New("desired_nodes"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(draDriverAddress, tfjsonpath.New("ready_nodes"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(draDriverAddress, tfjsonpath.New("published_nodes"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(draDriverAddress, tfjsonpath.New("published_devices"), knownvalue.Int64Exact(17)),
					statecheck.ExpectKnownValue(draDriverAddress, tfjsonpath.New("image"), knownvalue.StringExact(kube.DefaultDRADriverImage)),
					statecheck.ExpectKnownValue(draDriverAddress, tfjsonpath.New("device_classes"),
						knownvalue.SetExact([]knownvalue.Check{knownvalue.StringExact("gpu.nvidia.com"), knownvalue.StringExact("mig.nvidia.com")})),
				},
				Check: func(*terraform.State) error {
					ds, err := daemonSets.Get(context.Background(), "nvidia-dra-driver-gpu-kubelet-plugin", metav1.GetOptions{})
					require.NoError(t, err)
					require.Equal(t, "gpus", ds.Spec.Template.Spec.Containers[0].Name)
					dc, err := cluster.Client().ResourceV1().DeviceClasses().Get(context.Background(), "mig.nvidia.com", metav1.GetOptions{})
					require.NoError(t, err)
					require.Contains(t, dc.Spec.Selectors[0].CEL.Expression, "type == 'mig'")
					return nil
				},
			},
			// ImportState
			{
				ResourceName:            draDriverAddress,
				ImportState:             true,
				ImportStateId:           "dra-life/nvidia-dra-driver-gpu",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
			// Update and Read: a gate turned on, the MIG class dropped, in place.
			{
				Config: config(`
  feature_gates  = { TimeSlicingSettings = true }
  device_classes = ["gpu.nvidia.com"]
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(draDriverAddress, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(draDriverAddress, tfjsonpath.New("published_devices"), knownvalue.Int64Exact(17)),
				},
				Check: func(*terraform.State) error {
					_, err := cluster.Client().ResourceV1().DeviceClasses().Get(context.Background(), "mig.nvidia.com", metav1.GetOptions{})
					require.True(t, apierrors.IsNotFound(err), "the MIG class is gone: %v", err)
					ds, err := daemonSets.Get(context.Background(), "nvidia-dra-driver-gpu-kubelet-plugin", metav1.GetOptions{})
					require.NoError(t, err)
					require.Contains(t, ds.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "FEATURE_GATES", Value: "TimeSlicingSettings=true"})
					return nil
				},
			},
		},
	})
}

func TestAccDRADriver_drift(t *testing.T) {
	testAccPreCheck(t)
	draTestNodes(t, "dra-drift", k8s.NodeSpec{Name: "dra-drift-g4dn-0", InstanceType: instanceType(t, "g4dn.xlarge")})
	namespace := testNamespace(t, "dra-drift")
	config := testAccDRADriverConfig(namespace, "dra-drift", "")
	daemonSets := cluster.Client().AppsV1().DaemonSets(namespace)
	deviceClasses := cluster.Client().ResourceV1().DeviceClasses()
	const dsName = "nvidia-dra-driver-gpu-kubelet-plugin"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDRADriverDestroyed(namespace, false),
		Steps: []resource.TestStep{
			// Create and Read
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(draDriverAddress, tfjsonpath.New("published_nodes"), knownvalue.Int64Exact(1)),
				},
			},
			// The DaemonSet deleted out of band, its RBAC left: the plan
			// puts it back in place.
			{
				PreConfig: func() {
					ctx := context.Background()
					require.NoError(t, daemonSets.Delete(ctx, dsName, metav1.DeleteOptions{}))
					require.NoError(t, kube.WaitForDaemonSetGone(ctx, cluster.Client(), namespace, dsName))
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(draDriverAddress, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(draDriverAddress, tfjsonpath.New("published_nodes"), knownvalue.Int64Exact(1)),
				},
				Check: func(*terraform.State) error {
					_, err := daemonSets.Get(context.Background(), dsName, metav1.GetOptions{})
					return err
				},
			},
			// A DeviceClass deleted out of band: the plan makes it again.
			{
				PreConfig: func() {
					require.NoError(t, deviceClasses.Delete(context.Background(), "mig.nvidia.com", metav1.DeleteOptions{}))
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(draDriverAddress, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(draDriverAddress, tfjsonpath.New("device_classes"),
						knownvalue.SetExact([]knownvalue.Check{knownvalue.StringExact("gpu.nvidia.com"), knownvalue.StringExact("mig.nvidia.com")})),
				}},
				Check: func(*terraform.State) error {
					_, err := deviceClasses.Get(context.Background(), "mig.nvidia.com", metav1.GetOptions{})
					return err
				},
			},
			// The image edited out of band: the plan sets it back.
			{
				PreConfig: func() {
					patch := `{"spec":{"template":{"spec":{"containers":[{"name":"gpus","image":"nvcr.io/nvidia/k8s-dra-driver-gpu:v25.3.2"}]}}}}`
					_, err := daemonSets.Patch(context.Background(), dsName, k8stypes.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"})
					require.NoError(t, err)
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(draDriverAddress, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(draDriverAddress, tfjsonpath.New("image"), knownvalue.StringExact(kube.DefaultDRADriverImage)),
				}},
				Check: func(*terraform.State) error {
					ds, err := daemonSets.Get(context.Background(), dsName, metav1.GetOptions{})
					require.NoError(t, err)
					require.Equal(t, kube.DefaultDRADriverImage, ds.Spec.Template.Spec.Containers[0].Image)
					return nil
				},
			},
		},
	})
}

// TestAccDRADriver_nodeWithoutSlices: one node publishes, the other's
// plugin pod cannot be placed (the node takes no more pods), so it never
// publishes. The wait names that node and the scheduler's reason, and the
// create is kept in the state, tainted.
func TestAccDRADriver_nodeWithoutSlices(t *testing.T) {
	testAccPreCheck(t)
	draTestNodes(t, "dra-silent", k8s.NodeSpec{Name: "dra-silent-g5-0", InstanceType: instanceType(t, "g5.xlarge")},
		k8s.NodeSpec{Name: "dra-silent-full", InstanceType: instanceType(t, "g5.xlarge"),
			Resources: corev1.ResourceList{corev1.ResourcePods: k8sresource.MustParse("0")}})
	silentConfig := testAccDRADriverConfig("dra-silent", "dra-silent", `
  wait_for_rollout = false
  timeouts {
    create = "25s"
  }
`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDRADriverDestroyed("dra-silent", true),
		Steps: []resource.TestStep{
			{
				Config: silentConfig,
				ExpectError: wrapped("1 of 2 nodes running the kubelet plugin have not published",
					"dra-silent-full: no ResourceSlice of driver gpu.nvidia.com is published for it; its kubelet plugin pod",
					"is Pending: Unschedulable:", "Too many pods"),
			},
			expectTainted(silentConfig, draDriverAddress),
		},
	})
}

func TestAccDRADriver_badInput(t *testing.T) {
	testAccPreCheck(t)
	for _, tc := range []struct {
		description, body string
		want              *regexp.Regexp
	}{
		{"An unknown feature gate is refused, naming the known ones.", `feature_gates = { SharingStrategies = true }`,
			wrapped(`feature_gates["SharingStrategies"]`, "Known gates are:", "`MPSSupport` (alpha, default `false`)")},
		{"An extended resource needs the GPU DeviceClass.", `
  extended_resource_name = "nvidia.com/gpu"
  device_classes         = ["mig.nvidia.com"]`, wrapped(`Add "gpu.nvidia.com" to device_classes`)},
		{"An extended resource name needs a domain.", `extended_resource_name = "gpu"`, wrapped("it has no domain prefix")},
		{"A DeviceClass the chart does not have is refused.", `device_classes = ["vfio.gpu.nvidia.com"]`, wrapped("value must be one of")},
	} {
		t.Run(tc.description, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: testAccDRADriverConfig("dra-bad", "dra-bad", tc.body), PlanOnly: true, ExpectError: tc.want,
				}},
			})
		})
	}
}

// podPlacement waits until pod is scheduled or found unschedulable, and
// returns its node ("" when unschedulable) and the scheduler's message.
func podPlacement(t *testing.T, namespace, name string) (node, message string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods := cluster.Client().CoreV1().Pods(namespace)
	pod, err := kube.WaitForObject(ctx, kube.ListWatchFunctions[*corev1.PodList]{List: pods.List, Watch: pods.Watch}, name,
		func(pod *corev1.Pod, exists bool) (bool, error) {
			if !exists {
				return false, nil
			}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodScheduled && (c.Status == corev1.ConditionTrue || c.Reason == corev1.PodReasonUnschedulable) {
					return true, nil
				}
			}
			return false, nil
		})
	require.NoError(t, err)
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			message = c.Message
		}
	}
	return pod.Spec.NodeName, message
}

// TestAccDRADriver_besideDevicePlugin runs the device plugin on one node
// and the DRA driver on another, told apart by a label, and shows where an
// unchanged pod asking for nvidia.com/gpu: 1 lands: with the GPU
// DeviceClass mapping the extended resource (DRAExtendedResource, GA in
// Kubernetes 1.37) on either node, as capacity allows; without it, only
// where a device plugin advertises the resource.
func TestAccDRADriver_besideDevicePlugin(t *testing.T) {
	testAccPreCheck(t)
	devicePluginTestNodes(t, "dra-mixed-dp", map[string]string{"dra-mixed-dp-0": "g5.xlarge"})
	draTestNodes(t, "dra-mixed-dra", k8s.NodeSpec{Name: "dra-mixed-dra-0", InstanceType: instanceType(t, "g5.xlarge")})
	namespace := testNamespace(t, "dra-mixed-pods")
	config := func(extended string) string {
		return providerConfig() + fmt.Sprintf(`
resource "gpu_device_plugin" "test" {
  namespace     = "dra-mixed-dp"
  node_selector = { "gpu-test" = "dra-mixed-dp" }
}

resource "gpu_dra_driver" "test" {
  namespace     = "dra-mixed-dra"
  node_selector = { "gpu-test" = "dra-mixed-dra" }
  %s
}
`, extended)
	}
	pods := cluster.Client().CoreV1().Pods(namespace)
	runPod := func(name, node string) {
		_, err := pods.Create(context.Background(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       gpuPodSpec(node, 1, corev1.RestartPolicyAlways),
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// With nvidia.com/gpu mapped to the GPU DeviceClass, the same pod
	// lands on the DRA node, its GPU claimed through DRA; where the
	// cluster's DRAExtendedResource gate is off (Kubernetes 1.34 and 1.35,
	// the oldest the testbed runs), the API server drops the field and the
	// apply says so.
	mappedStep := resource.TestStep{
		Config: config(`extended_resource_name = "nvidia.com/gpu"`),
		ExpectError: wrapped("mapping extended resource nvidia.com/gpu to DeviceClass gpu.nvidia.com",
			"dropped the DeviceClass's extendedResourceName", "DRAExtendedResource"),
	}
	if extendedResourcesOn(t) {
		mappedStep = resource.TestStep{
			Config: config(`extended_resource_name = "nvidia.com/gpu"`),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(draDriverAddress, plancheck.ResourceActionUpdate),
			}},
			Check: func(*terraform.State) error {
				runPod("on-dra", "dra-mixed-dra-0")
				node, message := podPlacement(t, namespace, "on-dra")
				require.Equal(t, "dra-mixed-dra-0", node, "scheduler: %s", message)
				pod, err := pods.Get(context.Background(), "on-dra", metav1.GetOptions{})
				require.NoError(t, err)
				require.NotNil(t, pod.Status.ExtendedResourceClaimStatus, "the scheduler made a claim for nvidia.com/gpu")
				claim, err := cluster.Client().ResourceV1().ResourceClaims(namespace).Get(context.Background(),
					pod.Status.ExtendedResourceClaimStatus.ResourceClaimName, metav1.GetOptions{})
				require.NoError(t, err)
				require.NotNil(t, claim.Status.Allocation)
				require.Equal(t, "dra-mixed-dra-0", claim.Status.Allocation.Devices.Results[0].Pool)
				// The DRA node's one GPU is taken: a second pod waits.
				runPod("on-dra-2", "dra-mixed-dra-0")
				node, _ = podPlacement(t, namespace, "on-dra-2")
				require.Empty(t, node)
				return nil
			},
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(s *terraform.State) error {
			if err := testAccDRADriverDestroyed("dra-mixed-dra", true)(s); err != nil {
				return err
			}
			return testAccDevicePluginDestroyed("dra-mixed-dp", "nvidia-device-plugin", true)(s)
		},
		Steps: []resource.TestStep{
			// Without an extended resource: the device-plugin node takes
			// the pod, the DRA node cannot.
			{
				Config: config(""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(devicePluginAddress, tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(draDriverAddress, tfjsonpath.New("desired_nodes"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(draDriverAddress, tfjsonpath.New("published_devices"), knownvalue.Int64Exact(1)),
				},
				Check: func(*terraform.State) error {
					require.Zero(t, nodeAllocatable(t, "dra-mixed-dra-0", "nvidia.com/gpu"), "no device plugin runs on the DRA node")
					runPod("on-dp", "dra-mixed-dp-0")
					node, _ := podPlacement(t, namespace, "on-dp")
					require.Equal(t, "dra-mixed-dp-0", node)
					runPod("on-dra-unmapped", "dra-mixed-dra-0")
					node, message := podPlacement(t, namespace, "on-dra-unmapped")
					require.Empty(t, node, "nvidia.com/gpu is no DRA device without extendedResourceName")
					require.Contains(t, message, "Insufficient nvidia.com/gpu")
					require.NoError(t, pods.Delete(context.Background(), "on-dra-unmapped", metav1.DeleteOptions{}))
					return nil
				},
			},
			mappedStep,
		},
	})
}

// clusterWithoutDRA is a provider block for a cluster that answers as
// Kubernetes 1.33 does: no resource.k8s.io/v1. (A proxy in front of the
// testbed gives those two answers; the rest is the testbed.) wrote says
// whether anything but a read went through.
func clusterWithoutDRA(t *testing.T) (provider string, wrote *atomic.Bool) {
	t.Helper()
	wrote = new(atomic.Bool)
	provider = testbedProxy(t, func(upstream http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/version":
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"major":"1","minor":"33","gitVersion":"v1.33.5"}`))
			case strings.HasPrefix(r.URL.Path, "/apis/resource.k8s.io/v1"):
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
			default:
				if r.Method != http.MethodGet {
					wrote.Store(true)
				}
				upstream.ServeHTTP(w, r)
			}
		})
	})
	return provider, wrote
}

// TestAccDRADriver_clusterWithoutDRA: on a cluster without
// resource.k8s.io/v1 the plan warns and the apply stops before it writes
// anything, both naming the version and what DRA needs.
func TestAccDRADriver_clusterWithoutDRA(t *testing.T) {
	testAccPreCheck(t)
	provider, wrote := clusterWithoutDRA(t)
	config := provider + `
resource "gpu_dra_driver" "test" {
  namespace = "dra-old-cluster"
}
`
	planned := warnings(terraformPlan(t, config), "NVIDIA DRA driver cannot run on this cluster")
	require.Len(t, planned, 1)
	require.Contains(t, planned[0].Detail, "the cluster runs Kubernetes v1.33.5, which does not serve resource.k8s.io/v1")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: config,
			ExpectError: wrapped("the cluster runs Kubernetes v1.33.5, which does not serve resource.k8s.io/v1",
				"needs Kubernetes 1.34 or newer"),
		}},
	})
	require.False(t, wrote.Load(), "nothing was written to the cluster")
	_, err := cluster.Client().CoreV1().Namespaces().Get(context.Background(), "dra-old-cluster", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
}

// TestAccDRADriver_alphaGateWarns: turning an alpha gate on is said at
// plan, on the gate's line; a beta gate turned off is not.
func TestAccDRADriver_alphaGateWarns(t *testing.T) {
	testAccPreCheck(t)
	diags := terraformPlan(t, testAccDRADriverConfig("dra-gates", "dra-gates", `
  feature_gates = {
    MPSSupport              = true
    IMEXDaemonsWithDNSNames = false
  }
`))
	alpha := warnings(diags, "Alpha feature gate turned on")
	require.Len(t, alpha, 1, "%+v", diags)
	require.Contains(t, alpha[0].Detail, `feature_gates["MPSSupport"]`)
	require.Contains(t, alpha[0].Snippet.Code, "MPSSupport")
	require.Empty(t, warnings(diags, "NVIDIA DRA driver cannot run"), "the testbed serves DRA")
}

// extendedResourcesOn says whether the testbed's Kubernetes has the
// DRAExtendedResource feature gate on by default: from 1.36 (beta), GA in
// 1.37; alpha and off in 1.34 and 1.35.
func extendedResourcesOn(t *testing.T) bool {
	t.Helper()
	version, err := testbed.ChosenKubernetesVersion()
	require.NoError(t, err)
	minor, err := strconv.Atoi(strings.Split(strings.TrimPrefix(version, "v1."), ".")[0])
	require.NoError(t, err, version)
	return minor >= 36
}
