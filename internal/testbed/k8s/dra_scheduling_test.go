package k8s

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// The real kube-scheduler allocates from the simulated slices: these tests
// use only what Kubernetes 1.37 serves by default (DRA and
// DRAPrioritizedList are GA).

func TestSchedulerAllocatesASimulatedGPUByProductName(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 2*time.Minute)
	client := cluster.Client()
	namespace := createNamespace(ctx, t)
	ensureGPUDeviceClass(ctx, t)

	const node = "dra-sched-p5-0"
	addDRANode(ctx, t, NodeSpec{Name: node, InstanceType: mustInstanceType("p5.48xlarge"), DRA: true})
	_, err := client.AppsV1().DaemonSets(namespace).Create(ctx, draKubeletPluginDaemonSet(namespace, node), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForSlice(ctx, t, node, func(s *resourceapi.ResourceSlice) bool { return len(s.Spec.Devices) == 8 })

	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "one-h100", Namespace: namespace},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: nvdra.DeviceClassGPU,
				Selectors:       []resourceapi.DeviceSelector{productIs("NVIDIA H100 80GB HBM3")},
			},
		}}}},
	}
	_, err = client.ResourceV1().ResourceClaims(namespace).Create(ctx, claim, metav1.CreateOptions{})
	require.NoError(t, err)
	createClaimPod(ctx, t, namespace, "uses-one-h100", claim.Name)

	pod := waitForPodRunning(ctx, t, namespace, "uses-one-h100")
	require.Equal(t, node, pod.Spec.NodeName, "the only node with H100 slices")
	allocated := waitForAllocation(ctx, t, namespace, claim.Name)
	require.Len(t, allocated, 1)
	require.Equal(t, "gpu", allocated[0].Request)
	require.Equal(t, nvdra.DriverName, allocated[0].Driver)
	require.Equal(t, node, allocated[0].Pool)
	require.Regexp(t, `^gpu-[0-7]$`, allocated[0].Device)
}

func TestSchedulerFallsBackToTheSecondAlternativeOfFirstAvailable(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 2*time.Minute)
	client := cluster.Client()
	namespace := createNamespace(ctx, t)
	ensureGPUDeviceClass(ctx, t)

	const node = "dra-sched-p4d-0"
	addDRANode(ctx, t, NodeSpec{Name: node, InstanceType: mustInstanceType("p4d.24xlarge"), DRA: true})
	_, err := client.AppsV1().DaemonSets(namespace).Create(ctx, draKubeletPluginDaemonSet(namespace, node), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForSlice(ctx, t, node, func(s *resourceapi.ResourceSlice) bool { return len(s.Spec.Devices) == 8 })

	// First a B200, which no node has; else two A100s.
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "b200-else-two-a100", Namespace: namespace},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu",
			FirstAvailable: []resourceapi.DeviceSubRequest{
				{Name: "b200", DeviceClassName: nvdra.DeviceClassGPU, Selectors: []resourceapi.DeviceSelector{productIs("NVIDIA B200")},
					AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
				{Name: "a100", DeviceClassName: nvdra.DeviceClassGPU, Selectors: []resourceapi.DeviceSelector{productIs("NVIDIA A100-SXM4-40GB")},
					AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2},
			},
		}}}},
	}
	_, err = client.ResourceV1().ResourceClaims(namespace).Create(ctx, claim, metav1.CreateOptions{})
	require.NoError(t, err)
	createClaimPod(ctx, t, namespace, "uses-alternatives", claim.Name)

	pod := waitForPodRunning(ctx, t, namespace, "uses-alternatives")
	require.Equal(t, node, pod.Spec.NodeName)
	allocated := waitForAllocation(ctx, t, namespace, claim.Name)
	require.Len(t, allocated, 2)
	for _, r := range allocated {
		require.Equal(t, "gpu/a100", r.Request, "the second alternative")
		require.Equal(t, node, r.Pool)
	}
	require.NotEqual(t, allocated[0].Device, allocated[1].Device)
}

func TestSchedulerAllocatesASimulatedMIGDeviceByProfile(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 2*time.Minute)
	client := cluster.Client()
	namespace := createNamespace(ctx, t)
	ensureDeviceClass(ctx, t, nvdra.DeviceClassMIG, nvdra.DeviceTypeMIG)

	const node = "dra-sched-mig-p5-0"
	addDRANode(ctx, t, NodeSpec{Name: node, InstanceType: mustInstanceType("p5.48xlarge"), DRA: true,
		MIGDevices: []string{"3g.40gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}})
	_, err := client.AppsV1().DaemonSets(namespace).Create(ctx, draKubeletPluginDaemonSet(namespace, node), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForSlice(ctx, t, node, func(s *resourceapi.ResourceSlice) bool { return len(s.Spec.Devices) == 8*5 })

	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "one-3g", Namespace: namespace},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "mig",
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: nvdra.DeviceClassMIG,
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: "device.attributes['gpu.nvidia.com'].profile == '3g.40gb' && device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('39Gi')) >= 0",
				}}},
			},
		}}}},
	}
	_, err = client.ResourceV1().ResourceClaims(namespace).Create(ctx, claim, metav1.CreateOptions{})
	require.NoError(t, err)
	createClaimPod(ctx, t, namespace, "uses-one-3g", claim.Name)

	pod := waitForPodRunning(ctx, t, namespace, "uses-one-3g")
	require.Equal(t, node, pod.Spec.NodeName)
	allocated := waitForAllocation(ctx, t, namespace, claim.Name)
	require.Len(t, allocated, 1)
	// Profile 9 at memory slices 4-7 (four 1g.10gb take 0-3), on one of the 8 GPUs.
	require.Regexp(t, `^gpu-[0-7]-mig-9-4-4$`, allocated[0].Device)
}

func productIs(name string) resourceapi.DeviceSelector {
	return resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{
		Expression: "device.attributes['" + nvdra.DriverName + "']." + nvdra.AttrProductName + " == '" + name + "'",
	}}
}

// createClaimPod creates a pod that uses the ResourceClaim claim and
// tolerates GPU nodes' taint.
func createClaimPod(ctx context.Context, t *testing.T, namespace, name, claim string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			Tolerations:    []corev1.Toleration{{Key: gpulabels.TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: &claim}},
			Containers: []corev1.Container{{
				Name: "cuda", Image: "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpus"}}},
			}},
		},
	}
	_, err := cluster.Client().CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
}

func waitForPodRunning(ctx context.Context, t *testing.T, namespace, name string) *corev1.Pod {
	t.Helper()
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	pod, err := waitFor(ctx, cluster.Client().CoreV1().RESTClient(), "pods", namespace, byName, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning
	})
	require.NoError(t, err, "waiting for pod %s/%s to run", namespace, name)
	return pod
}

// waitForAllocation watches claim until the scheduler has allocated it
// and reserved it for a pod, and returns the allocated devices.
func waitForAllocation(ctx context.Context, t *testing.T, namespace, name string) []resourceapi.DeviceRequestAllocationResult {
	t.Helper()
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	claim, err := waitFor(ctx, cluster.Client().ResourceV1().RESTClient(), "resourceclaims", namespace, byName, func(c *resourceapi.ResourceClaim) bool {
		return c.Status.Allocation != nil && len(c.Status.ReservedFor) > 0
	})
	require.NoError(t, err, "waiting for claim %s/%s to be allocated", namespace, name)
	return allocatedDevices(claim)
}
