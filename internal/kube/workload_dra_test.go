package kube

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// testDeviceClass is a DeviceClass as NVIDIA's Helm chart writes it.
func testDeviceClass(name, deviceType string) *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: "device.driver == '" + nvdra.DriverName + "' && device.attributes['" + nvdra.DriverName + "'].type == '" + deviceType + "'",
		}}}},
	}
}

// testGPU is a whole GPU as the driver publishes it.
func testGPU(name, product, memory, compute, cuda string) resourcev1.Device {
	str := func(s string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{StringValue: ptr.To(s)} }
	ver := func(s string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{VersionValue: ptr.To(s)} }
	return resourcev1.Device{
		Name: name,
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			nvdra.AttrType:                  str(nvdra.DeviceTypeGPU),
			nvdra.AttrProductName:           str(product),
			nvdra.AttrCUDAComputeCapability: ver(compute),
			nvdra.AttrCUDADriverVersion:     ver(cuda),
		},
		Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{nvdra.CapacityMemory: {Value: resource.MustParse(memory)}},
	}
}

func testDRAFacts() DRAFacts {
	facts := DRAFacts{Classes: map[string]*resourcev1.DeviceClass{
		nvdra.DeviceClassGPU: testDeviceClass(nvdra.DeviceClassGPU, nvdra.DeviceTypeGPU),
		nvdra.DeviceClassMIG: testDeviceClass(nvdra.DeviceClassMIG, nvdra.DeviceTypeMIG),
	}}
	add := func(node string, d resourcev1.Device) {
		facts.Devices = append(facts.Devices, DRADevice{Node: node, Pool: node, Device: d})
	}
	add("gpu-a100-40", testGPU("gpu-0", "NVIDIA A100-SXM4-40GB", "40Gi", "8.0.0", "12.4.0"))
	add("gpu-a100-80", testGPU("gpu-0", "NVIDIA A100-SXM4-80GB", "80Gi", "8.0.0", "12.4.0"))
	add("gpu-a100-80", testGPU("gpu-1", "NVIDIA A100-SXM4-80GB", "80Gi", "8.0.0", "12.4.0"))
	return facts
}

// h100ElseTwoA100 asks for one H100, else two A100 80GB.
func h100ElseTwoA100() WorkloadGPU {
	return WorkloadGPU{
		Allocation: AllocateDRA, Count: 1, Products: []string{"NVIDIA-H100-80GB-HBM3"},
		Alternatives: []GPUChoice{{Count: 2, Products: []string{"NVIDIA A100-SXM4-80GB"}, MinMemoryGiB: 79}},
	}
}

func TestResourceClaimTemplateListsChoicesInOrder(t *testing.T) {
	spec := WorkloadSpec{Kind: WorkloadJob, Namespace: "ml", Name: "train", Owner: "o-1"}
	spec.Pod.GPU = h100ElseTwoA100()
	tpl, err := BuildResourceClaimTemplate(spec)
	require.NoError(t, err)
	require.Equal(t, "o-1", tpl.Annotations[AnnotationOwner])
	reqs := tpl.Spec.Spec.Devices.Requests
	require.Len(t, reqs, 1)
	require.Nil(t, reqs[0].Exactly)
	sub := reqs[0].FirstAvailable
	require.Len(t, sub, 2)
	require.Equal(t, "option-1", sub[0].Name)
	require.Equal(t, int64(1), sub[0].Count)
	require.Equal(t, int64(2), sub[1].Count)
	require.Equal(t, nvdra.DeviceClassGPU, sub[1].DeviceClassName)
	require.Equal(t, `device.attributes['gpu.nvidia.com'].productName.replace(' ', '-') in ["NVIDIA-A100-SXM4-80GB"]`, sub[1].Selectors[0].CEL.Expression,
		"a product is compared in GFD's spelling whichever way it was written")
	require.Equal(t, "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('79Gi')) >= 0", sub[1].Selectors[1].CEL.Expression)

	back, ok := gpuFromClaimTemplate(tpl)
	require.True(t, ok)
	require.Equal(t, spec.Pod.GPU, back, "the criteria read back from the template are the ones it was built from")

	job := BuildJob(spec)
	pod := job.Spec.Template.Spec
	require.Equal(t, "train", *pod.ResourceClaims[0].ResourceClaimTemplateName)
	require.Equal(t, []corev1.ResourceClaim{{Name: DRAClaimName}}, pod.Containers[0].Resources.Claims)
	require.Empty(t, pod.Containers[0].Resources.Limits, "a DRA pod asks for no nvidia.com/gpu")
	require.Nil(t, pod.Affinity, "the claim selects the devices, not node labels")
}

func TestPlaceDRAFindsTheNodesOfEachChoice(t *testing.T) {
	g := h100ElseTwoA100()
	g.MinCUDA = &CUDAVersion{Major: 12, Minor: 4}
	p, err := placeDRA(context.Background(), testDRAFacts(), g)
	require.NoError(t, err)
	require.Empty(t, p.Choices[0].Nodes)
	require.Equal(t, []string{"gpu-a100-80"}, p.Choices[1].Nodes)
	require.True(t, p.Satisfiable())
	msg := p.Unsatisfiable(0)
	require.Contains(t, msg, "No node has 1 GPU of NVIDIA-H100-80GB-HBM3")
	require.Contains(t, msg, "productName.replace(' ', '-') in [\"NVIDIA-H100-80GB-HBM3\"] (met by 0 of 3 devices)")
	require.Contains(t, msg, "gpu-a100-40: 1× NVIDIA A100-SXM4-40GB (40Gi, compute 8.0, CUDA 12.4)")
	require.Empty(t, p.Unsatisfiable(1))

	g.MinCUDA = &CUDAVersion{Major: 12, Minor: 8}
	p, err = placeDRA(context.Background(), testDRAFacts(), g)
	require.NoError(t, err)
	require.False(t, p.Satisfiable(), "no device's driver supports CUDA 12.8")
	require.Equal(t, "No node's NVIDIA driver supports CUDA 12.8 or newer: gpu-a100-40 supports 12.4, gpu-a100-80 supports 12.4",
		CUDAShortfall(p.CUDA, *g.MinCUDA))
}

func TestPlaceDRAWithoutTheDriversDeviceClassSaysSo(t *testing.T) {
	facts := testDRAFacts()
	facts.Classes[nvdra.DeviceClassGPU] = nil
	_, err := placeDRA(context.Background(), facts, h100ElseTwoA100())
	require.ErrorContains(t, err, "no DeviceClass gpu.nvidia.com")
}

func TestDiagnoseDRANamesTheHoldersOfBusyDevices(t *testing.T) {
	facts := testDRAFacts()
	facts.Devices[1].AllocatedTo = "claim ml/other-gpu-x (pod ml/other)"
	nodes := []NodeFacts{
		{Name: "cpu-0", Ready: true, Schedulable: true},
		{Name: "gpu-a100-40", Ready: true, Schedulable: true},
		{Name: "gpu-a100-80", Ready: true, Schedulable: true},
	}
	spec := WorkloadSpec{Kind: WorkloadJob, Namespace: "ml", Name: "train"}
	spec.Pod.GPU = h100ElseTwoA100()
	d, err := diagnoseDRA(context.Background(), facts, nodes, spec)
	require.NoError(t, err)
	require.True(t, d.CouldEverFit(), "the A100 80GB node could take it once its device is freed")
	s := d.String()
	require.Contains(t, s, "1 publishes no NVIDIA DRA devices")
	require.Contains(t, s, "gpu-a100-80: choice 2 (2 GPUs of NVIDIA A100-SXM4-80GB, with ≥ 79 GiB): 1 of 2 matching devices free, the others allocated to claim ml/other-gpu-x (pod ml/other)")
	require.Contains(t, s, "gpu-a100-40: choice 1")

	spec.Pod.GPU.Alternatives = nil
	d, err = diagnoseDRA(context.Background(), facts, nodes, spec)
	require.NoError(t, err)
	require.False(t, d.CouldEverFit(), "no node has an H100")
	require.True(t, strings.Contains(d.String(), "2 have no devices that can ever meet a choice of the claim"), d.String())
}

func TestNodeAffinityReadsBackComputeAndCUDA(t *testing.T) {
	g := WorkloadGPU{Count: 1, Products: []string{"NVIDIA-A10G"}, MinCompute: &ComputeCapability{Major: 8, Minor: 6}, MinCUDA: &CUDAVersion{Major: 12, Minor: 4}}
	aff := g.nodeAffinity()
	require.Len(t, aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, 4, "(compute ≥ 8.6) AND (CUDA ≥ 12.4) as four ORed terms")
	c := corev1.Container{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{ResourceGPU: resource.MustParse("1")}}}
	require.Equal(t, g, gpuSpecFrom(&c, aff))
}
