package provider

// Acceptance tests of gpu_workload's GPUs through DRA and its least CUDA
// version, through the Terraform CLI (and OpenTofu, with
// TF_ACC_TERRAFORM_PATH): a Job whose first choice no node has lands on
// its second; an impossible request fails at once with a node-by-node
// reason; a CUDA version no node's driver supports is refused at plan,
// naming the nodes' versions. Until the testbed's DRA simulator publishes
// devices for DRA nodes, draTestNode publishes them itself, as NVIDIA's
// gpu-kubelet-plugin would; the real kube-scheduler allocates.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// draGPU is one whole GPU as the driver publishes it: product, memory
// capacity, compute capability and CUDA version as versions.
type draGPU struct{ product, memory, compute, cuda string }

// draTestNode registers a kwok node labeled dra-test=<label>, without
// nvidia.com/gpu (no device plugin there), publishes its GPUs in a
// ResourceSlice, makes sure the chart's DeviceClasses exist, and removes
// the node and its slice when the test ends.
func draTestNode(t *testing.T, name, label string, gpus ...draGPU) {
	t.Helper()
	ctx := context.Background()
	client := cluster.Client()
	for class, deviceType := range map[string]string{nvdra.DeviceClassGPU: nvdra.DeviceTypeGPU, nvdra.DeviceClassMIG: nvdra.DeviceTypeMIG} {
		_, err := client.ResourceV1().DeviceClasses().Create(ctx, &resourcev1.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: class},
			Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
				Expression: fmt.Sprintf("device.driver == '%s' && device.attributes['%s'].type == '%s'", nvdra.DriverName, nvdra.DriverName, deviceType),
			}}}},
		}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	var devices []resourcev1.Device
	for i, g := range gpus {
		devices = append(devices, resourcev1.Device{
			Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				nvdra.AttrType:                  {StringValue: ptr.To(nvdra.DeviceTypeGPU)},
				nvdra.AttrProductName:           {StringValue: ptr.To(g.product)},
				nvdra.AttrCUDAComputeCapability: {VersionValue: ptr.To(g.compute)},
				nvdra.AttrCUDADriverVersion:     {VersionValue: ptr.To(g.cuda)},
			},
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{nvdra.CapacityMemory: {Value: k8sresource.MustParse(g.memory)}},
		})
	}
	diagnosisTestNodes(t, k8s.NodeSpec{Name: name, InstanceType: instanceType(t, "p4d.24xlarge"), WithoutGPUCapacity: true,
		ExtraLabels: map[string]string{"dra-test": label}})
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-gpu"},
		Spec: resourcev1.ResourceSliceSpec{
			Driver: nvdra.DriverName, NodeName: ptr.To(name), Devices: devices,
			Pool: resourcev1.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1},
		},
	}
	_, err := client.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.ResourceV1().ResourceSlices().Delete(context.Background(), slice.Name, metav1.DeleteOptions{}) })
}

var (
	draA100x40 = draGPU{"NVIDIA A100-SXM4-40GB", "40Gi", "8.0.0", "12.4.0"}
	draA100x80 = draGPU{"NVIDIA A100-SXM4-80GB", "80Gi", "8.0.0", "12.4.0"}
)

// draWorkload is a DRA job "w" in namespace restricted to the nodes
// labeled dra-test=<namespace>, with the gpu block's body and extra
// top-level configuration.
func draWorkload(namespace, gpuBody, extra string) string {
	return diagnosisWorkload(namespace, "job", `    allocation = "dra"`+"\n"+gpuBody, fmt.Sprintf(`
  node_selector = {
    "dra-test" = %q
  }`, namespace)+extra+longCreateTimeout)
}

// testAccCheckClaimTemplateGone is a CheckDestroy part: the workload's
// ResourceClaimTemplate goes with it.
func testAccCheckClaimTemplateGone(namespace, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		_, err := cluster.Client().ResourceV1().ResourceClaimTemplates(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("ResourceClaimTemplate %s/%s is left after destroy (%v)", namespace, name, err)
		}
		return nil
	}
}

func TestAccWorkload_draJobLandsOnItsSecondChoice(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "dra-second")
	draTestNode(t, "dra-second-a100-40", ns, draA100x40)
	draTestNode(t, "dra-second-a100-80", ns, draA100x80, draA100x80)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: draWorkload(ns, `
    count    = 1
    products = ["NVIDIA-H100-80GB-HBM3"]
    alternative {
      count          = 2
      products       = ["NVIDIA-A100-SXM4-80GB"]
      min_memory_gib = 79
    }`, ""),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("gpu_workload.w", tfjsonpath.New("status"), knownvalue.StringExact("Complete")),
				statecheck.ExpectKnownValue("gpu_workload.w", tfjsonpath.New("node_names"),
					knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("dra-second-a100-80")})),
				statecheck.ExpectKnownValue("gpu_workload.w", tfjsonpath.New("resource_claim_template"), knownvalue.StringExact(ns+"/w")),
			},
		}},
		CheckDestroy: resource.ComposeTestCheckFunc(testAccCheckWorkloadsGone(ns), testAccCheckClaimTemplateGone(ns, "w")),
	})
}

func TestAccWorkload_draImpossibleRequestFailsAtOnce(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "dra-impossible")
	draTestNode(t, "dra-impossible-a100-40", ns, draA100x40)
	draTestNode(t, "dra-impossible-a100-80", "elsewhere", draA100x80)
	// At plan an 80 GB A100 exists, so the request passes the plan's
	// check (which looks at devices, not at node_selector); but the only
	// node the workload may use has a 40 GB A100. The wait finds that no
	// node can ever run the pod, long before the 10-minute timeout, and
	// says why node by node.
	started := time.Now()
	testAccCreateFails(t, ns, draWorkload(ns, `
    count          = 1
    min_memory_gib = 79`, ""),
		wrapped("cannot be scheduled and no node can ever run it as written",
			"1 has no devices that can ever meet a choice of the claim (dra-impossible-a100-40: choice 1 (1 GPU with ≥ 79 GiB): 0 of 1 devices match",
			"device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('79Gi')) >= 0",
			"it has 1× NVIDIA A100-SXM4-40GB (40Gi, compute 8.0, CUDA 12.4)"))
	t.Logf("failed after %s", time.Since(started).Round(time.Second))
}

func TestAccWorkload_cudaVersionNoNodeSupportsIsRefusedAtPlan(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "cuda-refused")
	// Device plugin: GFD's labels of the testbed's GPU nodes.
	testAccCreateFails(t, ns, diagnosisWorkload(ns, "job", `
    count            = 1
    min_cuda_version = "13.0"`, ""),
		wrapped(`No node supports gpu.min_cuda_version "13.0"`, "No node's NVIDIA driver supports CUDA 13.0 or newer:", "supports 12.",
			"nvidia.com/cuda.runtime-version labels"))
	// DRA: the cudaDriverVersion of the devices.
	draTestNode(t, "cuda-refused-a100-80", ns, draA100x80)
	testAccCreateFails(t, ns, draWorkload(ns, `
    count            = 1
    min_cuda_version = "12.8"`, ""),
		wrapped(`No node supports gpu.min_cuda_version "12.8"`,
			"No node's NVIDIA driver supports CUDA 12.8 or newer: cuda-refused-a100-80 supports 12.4", "cudaDriverVersion"))
}

func TestAccWorkload_draRequestNoNodeCanServeIsRefusedAtPlan(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "dra-refused")
	draTestNode(t, "dra-refused-a100-80", ns, draA100x80, draA100x80)
	// Two choices, neither of which any node's devices meet: four A100s on
	// one node, or an H100.
	testAccCreateFails(t, ns, draWorkload(ns, `
    count    = 4
    products = ["NVIDIA-A100-SXM4-80GB"]
    alternative {
      count    = 1
      products = ["NVIDIA-H100-80GB-HBM3"]
    }`, ""),
		wrapped("No node can ever serve the gpu block",
			"Choice 1: No node has 4 GPUs of NVIDIA-A100-SXM4-80GB.",
			`Choice 2: No node has 1 GPU of NVIDIA-H100-80GB-HBM3; the constraint most devices fail is device.attributes['gpu.nvidia.com'].productName.replace(' ', '-') in ["NVIDIA-H100-80GB-HBM3"]`,
			"dra-refused-a100-80: 2× NVIDIA A100-SXM4-80GB (80Gi, compute 8.0, CUDA 12.4)"))
}
