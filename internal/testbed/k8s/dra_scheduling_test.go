package k8s

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// The real kube-scheduler allocates from the simulated slices: these tests
// use only what Kubernetes 1.37 serves by default (DRA and
// DRAPrioritizedList are GA).

func TestSchedulerAllocatesASimulatedGPUByProductName(t *testing.T) {
	const node = "dra-sched-p5-0"
	ctx, namespace, _ := draTest(t, NodeSpec{Name: node, InstanceType: mustInstanceType("p5.48xlarge"), DRA: true}, 8)

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
	ran, allocated := runPodWithClaim(ctx, t, namespace, claim)
	require.Equal(t, node, ran, "the only node with H100 slices")
	require.Len(t, allocated, 1)
	require.Equal(t, "gpu", allocated[0].Request)
	require.Equal(t, nvdra.DriverName, allocated[0].Driver)
	require.Equal(t, node, allocated[0].Pool)
	require.Regexp(t, `^gpu-[0-7]$`, allocated[0].Device)
}

func TestSchedulerFallsBackToTheSecondAlternativeOfFirstAvailable(t *testing.T) {
	const node = "dra-sched-p4d-0"
	ctx, namespace, _ := draTest(t, NodeSpec{Name: node, InstanceType: mustInstanceType("p4d.24xlarge"), DRA: true}, 8)

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
	ran, allocated := runPodWithClaim(ctx, t, namespace, claim)
	require.Equal(t, node, ran)
	require.Len(t, allocated, 2)
	for _, r := range allocated {
		require.Equal(t, "gpu/a100", r.Request, "the second alternative")
		require.Equal(t, node, r.Pool)
	}
	require.NotEqual(t, allocated[0].Device, allocated[1].Device)
}

func TestSchedulerAllocatesASimulatedMIGDeviceByProfile(t *testing.T) {
	const node = "dra-sched-mig-p5-0"
	ctx, namespace, _ := draTest(t, NodeSpec{Name: node, InstanceType: mustInstanceType("p5.48xlarge"), DRA: true,
		MIGDevices: []string{"3g.40gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}}, 8*5)

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
	ran, allocated := runPodWithClaim(ctx, t, namespace, claim)
	require.Equal(t, node, ran)
	require.Len(t, allocated, 1)
	// Profile 9 at memory slices 4-7 (four 1g.10gb take 0-3), on one of the 8 GPUs.
	require.Regexp(t, `^gpu-[0-7]-mig-9-4-4$`, allocated[0].Device)
}

func productIs(name string) resourceapi.DeviceSelector {
	return resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{
		Expression: "device.attributes['" + nvdra.DriverName + "']." + nvdra.AttrProductName + " == '" + name + "'",
	}}
}

// runPodWithClaim creates claim and a pod that uses it (tolerating GPU
// nodes' taint), waits until the pod runs and the scheduler has allocated
// the claim, and returns the pod's node and the allocated devices.
func runPodWithClaim(ctx context.Context, t *testing.T, namespace string, claim *resourceapi.ResourceClaim) (string, []resourceapi.DeviceRequestAllocationResult) {
	t.Helper()
	_, err := cluster.Client().ResourceV1().ResourceClaims(namespace).Create(ctx, claim, metav1.CreateOptions{})
	require.NoError(t, err)
	name := "uses-" + claim.Name
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			Tolerations:    []corev1.Toleration{{Key: gpulabels.TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: &claim.Name}},
			Containers: []corev1.Container{{
				Name: "cuda", Image: "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpus"}}},
			}},
		},
	}
	_, err = cluster.Client().CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	ran := waitForPodRunning(ctx, t, namespace, name)
	return ran.Spec.NodeName, waitForAllocation(ctx, t, namespace, claim.Name)
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
