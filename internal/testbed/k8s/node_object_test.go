package k8s

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

func TestGFDLabeledGPUNodeObjectCarriesWhatGFDNFDAndTheDevicePluginWrite(t *testing.T) {
	node, err := nodeObject(NodeSpec{Name: "gpu-g5-0", InstanceType: mustInstanceType("g5.xlarge"), GFDLabeled: true})
	require.NoError(t, err)

	require.Equal(t, map[string]string{
		"kubernetes.io/arch":                          "amd64",
		"kubernetes.io/os":                            "linux",
		"beta.kubernetes.io/arch":                     "amd64",
		"beta.kubernetes.io/os":                       "linux",
		"kubernetes.io/hostname":                      "gpu-g5-0",
		"node.kubernetes.io/instance-type":            "g5.xlarge",
		"type":                                        "kwok",
		"feature.node.kubernetes.io/pci-10de.present": "true",
		"nvidia.com/gpu.present":                      "true",
		"nvidia.com/gpu.product":                      "NVIDIA-A10G",
		"nvidia.com/gpu.count":                        "1",
		"nvidia.com/gpu.memory":                       "23028",
		"nvidia.com/gpu.family":                       "ampere",
		"nvidia.com/gpu.compute.major":                "8",
		"nvidia.com/gpu.compute.minor":                "6",
		"nvidia.com/gpu.replicas":                     "1",
		"nvidia.com/gpu.sharing-strategy":             "none",
		"nvidia.com/gpu.machine":                      "g5.xlarge",
		"nvidia.com/gpu.mode":                         "compute",
		"nvidia.com/mig.capable":                      "false",
		"nvidia.com/mps.capable":                      "false",
		"nvidia.com/cuda.driver-version.full":         "550.54.15",
		"nvidia.com/cuda.driver-version.major":        "550",
		"nvidia.com/cuda.driver-version.minor":        "54",
		"nvidia.com/cuda.driver-version.revision":     "15",
		"nvidia.com/cuda.runtime-version.full":        "12.4",
		"nvidia.com/cuda.runtime-version.major":       "12",
		"nvidia.com/cuda.runtime-version.minor":       "4",
		"nvidia.com/cuda.driver.major":                "550",
		"nvidia.com/cuda.driver.minor":                "54",
		"nvidia.com/cuda.driver.rev":                  "15",
		"nvidia.com/cuda.runtime.major":               "12",
		"nvidia.com/cuda.runtime.minor":               "4",
	}, node.Labels)
	require.Equal(t, map[string]string{"kwok.x-k8s.io/node": "fake"}, node.Annotations)
	require.Equal(t, []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}, node.Spec.Taints)

	want := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("16Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		gpulabels.ResourceName:          resource.MustParse("1"),
	}
	requireResources(t, want, node.Status.Capacity)
	requireResources(t, want, node.Status.Allocatable)
	require.Contains(t, node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "127.0.0.1"})
	require.Equal(t, testbed.KubernetesVersion, node.Status.NodeInfo.KubeletVersion)
}

func TestEveryNVIDIAInstanceTypeRegistersAsAGPUNode(t *testing.T) {
	for _, p := range ec2catalog.All() {
		if !p.HasGPU() {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			node, err := nodeObject(NodeSpec{Name: "gpu-0", InstanceType: p, GFDLabeled: true})
			require.NoError(t, err)
			wantArch := map[string]string{"x86_64": "amd64", "arm64": "arm64"}[p.Architecture]
			require.Equal(t, wantArch, node.Labels[corev1.LabelArchStable])
			require.Equal(t, wantArch, node.Labels["beta.kubernetes.io/arch"])
			require.Equal(t, wantArch, node.Status.NodeInfo.Architecture)
			require.Equal(t, p.GPUProduct, node.Labels[gpulabels.Product])
			require.Equal(t, strconv.Itoa(p.GPUCount), node.Labels[gpulabels.Count])
			require.Equal(t, strconv.Itoa(p.GPUMemoryMiB), node.Labels[gpulabels.Memory])
			require.Equal(t, p.Family, node.Labels[gpulabels.Family])
			gpus := node.Status.Allocatable[gpulabels.ResourceName]
			require.Equal(t, int64(p.GPUCount), gpus.Value())
			cpu := node.Status.Capacity[corev1.ResourceCPU]
			require.Equal(t, p.CPU, cpu.String())
		})
	}
}

func TestNonNVIDIAAcceleratorNodeObjectHasNoGPUTraits(t *testing.T) {
	for _, name := range []string{"g4ad.xlarge", "inf2.xlarge", "trn1.2xlarge", "dl1.24xlarge", "m7g.large"} {
		t.Run(name, func(t *testing.T) {
			node, err := nodeObject(NodeSpec{Name: "other-0", InstanceType: mustInstanceType(name)})
			require.NoError(t, err)
			for key := range node.Labels {
				require.NotContains(t, key, "nvidia.com/")
			}
			require.Empty(t, node.Spec.Taints)
			require.NotContains(t, node.Status.Capacity, corev1.ResourceName(gpulabels.ResourceName))
		})
	}
}

func TestNodeObjectRejectsAnUnknownArchitecture(t *testing.T) {
	p := mustInstanceType("m5.xlarge")
	p.Architecture = "sparc"
	_, err := nodeObject(NodeSpec{Name: "cpu-0", InstanceType: p})
	require.ErrorContains(t, err, `unknown architecture "sparc"`)
}

func TestCPUNodeObjectHasNoGPUTraits(t *testing.T) {
	node, err := nodeObject(NodeSpec{Name: "cpu-m5-0", InstanceType: mustInstanceType("m5.xlarge")})
	require.NoError(t, err)
	for key := range node.Labels {
		require.NotContains(t, key, "nvidia.com/")
	}
	require.Empty(t, node.Spec.Taints)
	require.NotContains(t, node.Status.Capacity, corev1.ResourceName(gpulabels.ResourceName))
}

func TestNodeObjectOptions(t *testing.T) {
	t.Run("WithoutGPUCapacity keeps the labels and taint but not the resource", func(t *testing.T) {
		node, err := nodeObject(NodeSpec{Name: "gpu-p5-0", InstanceType: mustInstanceType("p5.48xlarge"), WithoutGPUCapacity: true, GFDLabeled: true})
		require.NoError(t, err)
		require.Equal(t, "8", node.Labels[gpulabels.Count])
		require.Len(t, node.Spec.Taints, 1)
		require.NotContains(t, node.Status.Capacity, corev1.ResourceName(gpulabels.ResourceName))
		require.NotContains(t, node.Status.Allocatable, corev1.ResourceName(gpulabels.ResourceName))
	})
	t.Run("without GFDLabeled only the instance type says it has GPUs, as on a fresh EKS node", func(t *testing.T) {
		node, err := nodeObject(NodeSpec{Name: "gpu-g5-0", InstanceType: mustInstanceType("g5.xlarge"), WithoutGPUCapacity: true,
			ExtraLabels: map[string]string{gpulabels.NFDPCIPresent: "true"}})
		require.NoError(t, err)
		for key := range node.Labels {
			require.False(t, strings.HasPrefix(key, "nvidia.com/"), "label %s", key)
		}
		require.Equal(t, "g5.xlarge", node.Labels[gpulabels.InstanceType])
		require.Equal(t, "true", node.Labels[gpulabels.NFDPCIPresent])
		require.Len(t, node.Spec.Taints, 1)
		require.NotContains(t, node.Status.Capacity, corev1.ResourceName(gpulabels.ResourceName))
	})
	t.Run("Resources are added to capacity and allocatable", func(t *testing.T) {
		node, err := nodeObject(NodeSpec{Name: "gpu-p4d-0", InstanceType: mustInstanceType("p4d.24xlarge"), WithoutGPUCapacity: true,
			Resources: corev1.ResourceList{"nvidia.com/mig-1g.5gb": resource.MustParse("7")}})
		require.NoError(t, err)
		requireQuantity(t, "7", node.Status.Capacity["nvidia.com/mig-1g.5gb"])
		requireQuantity(t, "7", node.Status.Allocatable["nvidia.com/mig-1g.5gb"])
		require.NotContains(t, node.Status.Allocatable, corev1.ResourceName(gpulabels.ResourceName))
	})
	t.Run("ExtraLabels are added and may override", func(t *testing.T) {
		node, err := nodeObject(NodeSpec{Name: "n", InstanceType: mustInstanceType("g4dn.xlarge"),
			ExtraLabels: map[string]string{"eks.amazonaws.com/nodegroup": "gpu", "type": "eks"}})
		require.NoError(t, err)
		require.Equal(t, "gpu", node.Labels["eks.amazonaws.com/nodegroup"])
		require.Equal(t, "eks", node.Labels["type"])
	})
	t.Run("a spec without a name is refused", func(t *testing.T) {
		_, err := nodeObject(NodeSpec{InstanceType: mustInstanceType("g4dn.xlarge")})
		require.Error(t, err)
	})
	t.Run("a spec without an instance type is refused", func(t *testing.T) {
		_, err := nodeObject(NodeSpec{Name: "n"})
		require.ErrorContains(t, err, "no instance type")
	})
}

func requireResources(t *testing.T, want, got corev1.ResourceList) {
	t.Helper()
	require.Len(t, got, len(want))
	for name, quantity := range want {
		requireQuantity(t, quantity.String(), got[name])
	}
}

func TestNodeObjectTaintsOverride(t *testing.T) {
	for _, tc := range []struct {
		description string
		spec        NodeSpec
		want        []corev1.Taint
	}{
		{
			description: "a GPU node gets the nvidia.com/gpu taint by default",
			spec:        NodeSpec{Name: "n", InstanceType: mustInstanceType("g5.xlarge")},
			want:        []corev1.Taint{{Key: gpulabels.TaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		},
		{
			description: "an EKS node carries its node group's taints instead",
			spec: NodeSpec{Name: "n", InstanceType: mustInstanceType("g5.xlarge"), OverrideTaints: true,
				Taints: []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoExecute}}},
			want: []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoExecute}},
		},
		{
			description: "an EKS node of a group without taints has none",
			spec:        NodeSpec{Name: "n", InstanceType: mustInstanceType("g5.xlarge"), OverrideTaints: true},
			want:        []corev1.Taint{},
		},
	} {
		t.Run(tc.description, func(t *testing.T) {
			node, err := nodeObject(tc.spec)
			require.NoError(t, err)
			require.Equal(t, len(tc.want), len(node.Spec.Taints))
			if len(tc.want) > 0 {
				require.Equal(t, tc.want, node.Spec.Taints)
			}
		})
	}
}
