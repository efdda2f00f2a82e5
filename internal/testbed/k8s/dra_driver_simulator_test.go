package k8s

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

func TestDRASimulatorPublishesANodesGPUsWhileThePluginRuns(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 2*time.Minute)
	client := cluster.Client()
	namespace := createNamespace(ctx, t)

	const node = "dra-sim-p5-0"
	addDRANode(ctx, t, NodeSpec{Name: node, InstanceType: mustInstanceType("p5.48xlarge"), DRA: true})
	registered, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, registered.Status.Capacity, corev1.ResourceName(gpulabels.ResourceName), "a DRA node has no device-plugin GPUs")
	require.Equal(t, "true", registered.Labels[DRANodeLabel])
	requireNoSlices(ctx, t, node)

	slice := startDRAPlugin(ctx, t, namespace, node, 8)

	// What the kubelet-plugin helper's controller writes for one pool.
	require.Equal(t, nvdra.DriverName, slice.Spec.Driver)
	require.Equal(t, node, slice.Spec.Pool.Name)
	require.Equal(t, int64(1), slice.Spec.Pool.ResourceSliceCount)
	require.Equal(t, int64(1), slice.Spec.Pool.Generation)
	require.Equal(t, node, *slice.Spec.NodeName)
	require.Len(t, slice.OwnerReferences, 1)
	require.Equal(t, "Node", slice.OwnerReferences[0].Kind)
	require.Equal(t, registered.UID, slice.OwnerReferences[0].UID)
	var names []string
	for _, d := range slice.Spec.Devices {
		names = append(names, d.Name)
		require.Equal(t, "NVIDIA H100 80GB HBM3", *d.Attributes[nvdra.AttrProductName].StringValue)
		require.Equal(t, nvdra.DeviceTypeGPU, *d.Attributes[nvdra.AttrType].StringValue)
		memory := d.Capacity[nvdra.CapacityMemory].Value
		require.Equal(t, "81559Mi", memory.String())
	}
	require.ElementsMatch(t, []string{"gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-6", "gpu-7"}, names)

	// The plugin's pod goes: the node's slices go with it.
	require.NoError(t, client.AppsV1().DaemonSets(namespace).Delete(ctx, DRAKubeletPluginDaemonSet(namespace, nil).Name, metav1.DeleteOptions{}))
	waitForNoSlices(ctx, t, node)
}

func TestDRASimulatorPublishesMIGDevicesInsteadOfTheirGPUs(t *testing.T) {
	const node = "dra-sim-p4d-mig-0"
	_, _, slice := draTest(t, NodeSpec{Name: node, InstanceType: mustInstanceType("p4d.24xlarge"), DRA: true,
		MIGDevices: []string{"3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"}}, 8*4) // four MIG devices on each of 8 GPUs, no whole GPU
	byName := map[string]resourceapi.Device{}
	for _, d := range slice.Spec.Devices {
		require.Equal(t, nvdra.DeviceTypeMIG, *d.Attributes[nvdra.AttrType].StringValue, d.Name)
		byName[d.Name] = d
	}
	// GPU 5's devices: 3g.20gb (profile 9) on slices 4-7, as it only fits
	// there beside the rest; 2g.10gb (14) on 0-1, the 1g.5gb (19) on 2 and 3.
	for name, profile := range map[string]string{"gpu-5-mig-9-4-4": "3g.20gb", "gpu-5-mig-14-0-2": "2g.10gb", "gpu-5-mig-19-2-1": "1g.5gb", "gpu-5-mig-19-3-1": "1g.5gb"} {
		d, ok := byName[name]
		require.True(t, ok, "device %s published", name)
		require.Equal(t, profile, *d.Attributes[nvdra.AttrProfile].StringValue)
		require.True(t, strings.HasPrefix(*d.Attributes[nvdra.AttrParentUUID].StringValue, "GPU-"))
	}
	memory := byName["gpu-5-mig-9-4-4"].Capacity[nvdra.CapacityMemory].Value
	require.Equal(t, "19968Mi", memory.String())
	require.Contains(t, byName["gpu-5-mig-19-3-1"].Capacity, resourceapi.QualifiedName("memorySlice3"))
}

func TestDRASimulatorReadsTheMIGLayoutWhenThePluginRestarts(t *testing.T) {
	const node = "dra-sim-p5-remig-0"
	ctx, namespace, first := draTest(t, NodeSpec{Name: node, InstanceType: mustInstanceType("p5.48xlarge"), DRA: true}, 8)
	client := cluster.Client()
	require.Equal(t, int64(1), first.Spec.Pool.Generation)

	// mig-parted repartitions the GPUs; the plugin sees it when it restarts.
	patch := `{"metadata":{"annotations":{"` + MIGDevicesAnnotation + `":"1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb"}}}`
	_, err := client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	require.NoError(t, client.CoreV1().Pods(namespace).Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}))

	// The DaemonSet's new pod publishes 7 MIG devices per GPU, and no GPU.
	// (The simulator wiped the old slice when the old pod went, where the
	// kubelet waits 30 s: the new plugin's is a new slice.)
	again := waitForSlice(ctx, t, node, func(s *resourceapi.ResourceSlice) bool { return len(s.Spec.Devices) == 8*7 })
	require.Equal(t, int64(1), again.Spec.Pool.ResourceSliceCount)
	for _, d := range again.Spec.Devices {
		require.Equal(t, "1g.10gb", *d.Attributes[nvdra.AttrProfile].StringValue, d.Name)
	}
	list, err := client.ResourceV1().ResourceSlices().List(ctx, DRASlicesOf(node))
	require.NoError(t, err)
	require.Len(t, list.Items, 1, "the old slice is gone")
}

func TestDRASimulatorIgnoresTheChartsOtherContainers(t *testing.T) {
	for _, tc := range []struct {
		description string
		containers  []corev1.Container
		want        bool
	}{
		{description: "the chart's gpus container", want: true,
			containers: []corev1.Container{{Name: "compute-domains", Image: "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.1"}, {Name: "gpus", Image: "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.1"}}},
		{description: "a mirror of the image, by digest", want: true,
			containers: []corev1.Container{{Name: "gpus", Image: "123456789012.dkr.ecr.us-east-1.amazonaws.com/mirror/k8s-dra-driver-gpu@sha256:0123"}}},
		{description: "a local registry with a port", want: true,
			containers: []corev1.Container{{Name: "gpus", Image: "localhost:5000/k8s-dra-driver-gpu:v25.8.1"}}},
		{description: "only the compute-domains container",
			containers: []corev1.Container{{Name: "compute-domains", Image: "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.1"}}},
		{description: "a container named gpus on another image",
			containers: []corev1.Container{{Name: "gpus", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}}},
	} {
		t.Run(tc.description, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: tc.containers}}
			require.Equal(t, tc.want, isDRAKubeletPlugin(pod))
		})
	}
}

// draTest starts a test on a DRA node of its own: it registers spec, starts
// the DRA driver on it in a namespace of the test's, and returns the test's
// context, the namespace and the node's slice, which must list devices
// devices.
func draTest(t *testing.T, spec NodeSpec, devices int) (context.Context, string, *resourceapi.ResourceSlice) {
	t.Helper()
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 2*time.Minute)
	namespace := createNamespace(ctx, t)
	addDRANode(ctx, t, spec)
	return ctx, namespace, startDRAPlugin(ctx, t, namespace, spec.Name, devices)
}

// addDRANode registers spec and deletes it when the test ends.
func addDRANode(ctx context.Context, t *testing.T, spec NodeSpec) {
	t.Helper()
	require.NoError(t, cluster.AddNode(ctx, spec))
	t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), spec.Name)) })
	require.NoError(t, cluster.WaitForNodesReady(ctx, spec.Name))
}

// startDRAPlugin starts the DRA driver on node and waits for the node's
// slice, which must list devices devices.
func startDRAPlugin(ctx context.Context, t *testing.T, namespace, node string, devices int) *resourceapi.ResourceSlice {
	t.Helper()
	require.NoError(t, cluster.StartDRADriver(ctx, namespace, map[string]string{corev1.LabelHostname: node}, node))
	slice := waitForSlice(ctx, t, node, func(s *resourceapi.ResourceSlice) bool { return len(s.Spec.Devices) > 0 })
	require.Len(t, slice.Spec.Devices, devices, "devices in %s's ResourceSlice", node)
	return slice
}

// waitForSlice watches node's ResourceSlices until done accepts one.
func waitForSlice(ctx context.Context, t *testing.T, node string, done func(*resourceapi.ResourceSlice) bool) *resourceapi.ResourceSlice {
	t.Helper()
	slice, err := waitFor(ctx, cluster.Client().ResourceV1().RESTClient(), "resourceslices", "", DRASlicesOf(node), done)
	require.NoError(t, err, "waiting for a ResourceSlice of %s", node)
	return slice
}

func requireNoSlices(ctx context.Context, t *testing.T, node string) {
	t.Helper()
	list, err := cluster.Client().ResourceV1().ResourceSlices().List(ctx, DRASlicesOf(node))
	require.NoError(t, err)
	require.Empty(t, list.Items, "ResourceSlices of %s", node)
}

// waitForNoSlices watches until node has no ResourceSlice of the driver.
func waitForNoSlices(ctx context.Context, t *testing.T, node string) {
	t.Helper()
	client := cluster.Client().ResourceV1()
	for {
		list, err := client.ResourceSlices().List(ctx, DRASlicesOf(node))
		require.NoError(t, err)
		if len(list.Items) == 0 {
			return
		}
		opts := DRASlicesOf(node)
		opts.ResourceVersion = list.ResourceVersion
		w, err := client.ResourceSlices().Watch(ctx, opts)
		require.NoError(t, err)
		remaining := len(list.Items)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				remaining--
			}
			if remaining == 0 {
				break
			}
		}
		w.Stop()
		require.NoError(t, ctx.Err(), "waiting for %s's ResourceSlices to go", node)
	}
}

func allocatedDevices(claim *resourceapi.ResourceClaim) []resourceapi.DeviceRequestAllocationResult {
	if claim.Status.Allocation == nil {
		return nil
	}
	return slices.Clone(claim.Status.Allocation.Devices.Results)
}
