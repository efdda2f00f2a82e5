package kube

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

func TestGPUHardware(t *testing.T) {
	tests := []struct {
		description string
		labels      map[string]string
		capacity    corev1.ResourceList
		want        string
	}{
		{"GFD's product label names the GPU.", map[string]string{gpulabels.Product: "NVIDIA-A10G", gpulabels.Present: "true"}, nil, "nvidia.com/gpu.product=NVIDIA-A10G"},
		{"The GPU Operator's presence label says there is one.", map[string]string{gpulabels.Present: "true"}, nil, "nvidia.com/gpu.present=true"},
		{"NFD's PCI vendor label (10de is NVIDIA) says there is one.", map[string]string{gpulabels.NFDPCIPresent: "true"}, nil, "feature.node.kubernetes.io/pci-10de.present=true"},
		{"An instance type with NVIDIA GPUs says how many of which.", map[string]string{gpulabels.InstanceType: "p5.48xlarge"}, nil, "instance type p5.48xlarge (8 NVIDIA-H100-80GB-HBM3)"},
		{"A CPU instance type says nothing.", map[string]string{gpulabels.InstanceType: "m5.xlarge"}, nil, ""},
		{"An instance type the catalog does not know says nothing.", map[string]string{gpulabels.InstanceType: "n2-standard-8"}, nil, ""},
		{"GPUs left in capacity by a plugin that has gone.", nil, corev1.ResourceList{ResourceGPU: resource.MustParse("8")}, "nvidia.com/gpu capacity 8, none allocatable"},
		{"The capacity of 0 a kubelet writes for a removed plugin says nothing.", nil, corev1.ResourceList{ResourceGPU: resource.MustParse("0")}, ""},
		{"A presence label that is not true says nothing.", map[string]string{gpulabels.Present: "false"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tt.labels}, Status: corev1.NodeStatus{Capacity: tt.capacity}}
			require.Equal(t, tt.want, gpuHardware(node))
		})
	}
}

func TestIsDevicePluginPod(t *testing.T) {
	withHostPath := func(p string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p}}},
		}}}
	}
	tests := []struct {
		description string
		pod         *corev1.Pod
		want        bool
	}{
		{"The kubelet's default device-plugins directory.", withHostPath("/var/lib/kubelet/device-plugins"), true},
		{"With a trailing slash.", withHostPath("/var/lib/kubelet/device-plugins/"), true},
		{"Under a kubelet root moved elsewhere (k0s).", withHostPath("/var/lib/k0s/kubelet/device-plugins"), true},
		{"The kubelet socket itself, inside the directory.", withHostPath("/var/lib/kubelet/device-plugins/kubelet.sock"), true},
		{"The whole kubelet directory is not a device plugin's mount (CSI drivers take it).", withHostPath("/var/lib/kubelet"), false},
		{"Another host path.", withHostPath("/run/nvidia/mps"), false},
		{"No volumes at all.", &corev1.Pod{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			require.Equal(t, tt.want, isDevicePluginPod(tt.pod))
		})
	}
}

// TestListNodeFactsSeesUnservedGPUNodes reads, from a real API server, GPU
// nodes that no device plugin serves: one known by its instance type
// alone, one with a device plugin pod that has not advertised yet; and a
// MIG node whose plugin advertises MIG instances only.
func TestListNodeFactsSeesUnservedGPUNodes(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	admin := cluster.Client()
	node := func(name string, labels map[string]string, resources corev1.ResourceList) *corev1.Node {
		resources = resources.DeepCopy()
		if resources == nil {
			resources = corev1.ResourceList{}
		}
		resources[corev1.ResourcePods] = resource.MustParse("110")
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Status: corev1.NodeStatus{
				Capacity: resources, Allocatable: resources,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
			},
		}
	}
	require.NoError(t, createNode(ctx, admin, node("unserved-g5", map[string]string{gpulabels.InstanceType: "g5.xlarge"}, nil)))
	require.NoError(t, createNode(ctx, admin, node("unserved-starting", map[string]string{gpulabels.Present: "true"}, nil)))
	require.NoError(t, createNode(ctx, admin, node("unserved-mig", map[string]string{gpulabels.Present: "true"},
		corev1.ResourceList{"nvidia.com/mig-1g.5gb": resource.MustParse("7"), ResourceGPU: resource.MustParse("0")})))

	ns := "unserved"
	createNamespace(t, ns)
	plugin := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nvidia-device-plugin-x7k2p"},
		Spec: corev1.PodSpec{
			NodeName:   "unserved-starting",
			Containers: []corev1.Container{{Name: "plugin", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}},
			Volumes: []corev1.Volume{{Name: "device-plugins", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kubelet/device-plugins"},
			}}},
		},
	}
	_, err := admin.CoreV1().Pods(ns).Create(ctx, plugin, metav1.CreateOptions{})
	require.NoError(t, err)

	facts, err := ListNodeFacts(ctx, admin, ResourceGPU)
	require.NoError(t, err)
	byName := map[string]NodeFacts{}
	for _, f := range facts {
		byName[f.Name] = f
	}

	g5 := byName["unserved-g5"]
	require.True(t, g5.HasGPU)
	require.Equal(t, "instance type g5.xlarge (1 NVIDIA-A10G)", g5.GPUHardware)
	require.Empty(t, g5.Advertised)
	require.Empty(t, g5.DevicePluginPod)

	starting := byName["unserved-starting"]
	require.Equal(t, "unserved/nvidia-device-plugin-x7k2p", starting.DevicePluginPod)
	require.Empty(t, starting.Advertised)

	mig := byName["unserved-mig"]
	require.Equal(t, map[corev1.ResourceName]int64{"nvidia.com/mig-1g.5gb": 7}, mig.Advertised, "a resource at 0 is not advertised")
	require.Zero(t, mig.Allocatable)

	d := Diagnose([]NodeFacts{g5, starting, mig}, GPURequest{Resource: ResourceGPU, Count: 1})
	require.Equal(t, "0 of 3 nodes can run it: 1 is a GPU node where no NVIDIA device plugin runs, so it advertises no nvidia.com/gpu (unserved-g5: instance type g5.xlarge (1 NVIDIA-A10G)), "+
		"1 runs a device plugin pod but advertises no nvidia.com/gpu yet (unserved-starting: unserved/nvidia-device-plugin-x7k2p), "+
		"1 has fewer than 1 nvidia.com/gpu allocatable in all (unserved-mig: 0; it advertises nvidia.com/mig-1g.5gb: 7)", d.String())
}
