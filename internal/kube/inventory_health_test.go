package kube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// xid79Message is a condition message as the health agent writes it.
const xid79Message = "XID 79 on GPU 3 (GPU-00000003, 0000:9a:00.0): the GPU has fallen off the bus"

// withGPUHealth sets node's AcceleratedHardwareReady condition and its
// unhealthy-GPUs annotation as a health agent writes them.
func withGPUHealth(node *corev1.Node, status corev1.ConditionStatus, reason, message string, since time.Time, unhealthy ...gpuhealth.UnhealthyGPU) *corev1.Node {
	node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
		Type: gpuhealth.ConditionType, Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(since), LastHeartbeatTime: metav1.NewTime(since),
	})
	if len(unhealthy) > 0 {
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[gpuhealth.AnnotationUnhealthyGPUs] = gpuhealth.EncodeUnhealthy(unhealthy)
	}
	return node
}

func unhealthyGPU(i int, reason string) gpuhealth.UnhealthyGPU {
	return gpuhealth.UnhealthyGPU{GPURef: gpuhealth.GPURef{Index: i, UUID: testGPUUUID(i), PCIBusID: testGPUPCIBusID(i)}, Reason: reason}
}

// inventoryNodeOf is ListInventory's answer for one node, its DRA devices
// and what its pods request through the device plugin.
func inventoryNodeOf(t *testing.T, node *corev1.Node, devices []slicedDevice, dpAllocated int64) GPUNode {
	t.Helper()
	n, _ := gpuNodeFrom(node)
	var ds []*draDevice
	for _, d := range devices {
		dev := draDeviceFrom(&d.device)
		dev.allocated = d.allocated
		ds = append(ds, dev)
	}
	n.settleGPUPath(ds, dpAllocated)
	return n
}

func TestInventoryFreeExcludesUnhealthyGPUs(t *testing.T) {
	since := time.Date(2026, 11, 26, 10, 42, 0, 0, time.UTC)
	xid := gpuhealth.XIDErrorReason(79)
	timeSliced := func(gpus, replicas, allocatable int64) *corev1.Node {
		n := plainGPUNode("ts", "NVIDIA-A100-SXM4-40GB-SHARED", gpus, 40960, map[string]string{gpulabels.Replicas: itoa(replicas)})
		n.Status.Capacity[ResourceGPU] = *resource.NewQuantity(gpus*replicas, resource.DecimalSI)
		n.Status.Allocatable[ResourceGPU] = *resource.NewQuantity(allocatable, resource.DecimalSI)
		return n
	}
	h100 := func(i int, allocated bool) slicedDevice {
		return slicedDevice{testGPUDevice(i, "NVIDIA H100 80GB HBM3", 80), allocated}
	}
	for _, tc := range []struct {
		description string
		node        *corev1.Node
		devices     []slicedDevice
		dpAllocated int64
		free        int64
		dra         DeviceCounts
	}{{
		description: "a node no agent reports on counts as before",
		node:        plainGPUNode("n", "NVIDIA-A100-SXM4-40GB", 8, 40960, nil),
		dpAllocated: 3,
		free:        5,
	}, {
		description: "condition True changes nothing",
		node:        withGPUHealth(plainGPUNode("n", "NVIDIA-A100-SXM4-40GB", 8, 40960, nil), corev1.ConditionTrue, gpuhealth.ReasonReady, "", since),
		dpAllocated: 3,
		free:        5,
	}, {
		description: "condition Unknown (no driver) changes nothing",
		node:        withGPUHealth(plainGPUNode("n", "NVIDIA-A100-SXM4-40GB", 8, 40960, nil), corev1.ConditionUnknown, "NvidiaDriverNotLoaded", "no driver", since),
		free:        8,
	}, {
		description: "one unhealthy GPU of 8 with 3 allocated leaves 4 free",
		node:        withGPUHealth(plainGPUNode("n", "NVIDIA-A100-SXM4-40GB", 8, 40960, nil), corev1.ConditionFalse, xid, xid79Message, since, unhealthyGPU(3, xid)),
		dpAllocated: 3,
		free:        4,
	}, {
		description: "a device plugin that already dropped the GPU from allocatable is not counted twice",
		node: func() *corev1.Node {
			n := withGPUHealth(plainGPUNode("n", "NVIDIA-A100-SXM4-40GB", 8, 40960, nil), corev1.ConditionFalse, xid, xid79Message, since, unhealthyGPU(3, xid))
			n.Status.Allocatable[ResourceGPU] = resource.MustParse("7")
			return n
		}(),
		dpAllocated: 3,
		free:        4,
	}, {
		description: "time-slicing: an unhealthy GPU takes all its replicas (4 GPUs × 4, one unhealthy, 5 shares used: 12 − 5 = 7)",
		node:        withGPUHealth(timeSliced(4, 4, 16), corev1.ConditionFalse, xid, xid79Message, since, unhealthyGPU(0, xid)),
		dpAllocated: 5,
		free:        7,
	}, {
		description: "the same GPU listed twice is one GPU",
		node:        withGPUHealth(plainGPUNode("n", "NVIDIA-A100-SXM4-40GB", 8, 40960, nil), corev1.ConditionFalse, xid, xid79Message, since, unhealthyGPU(3, xid), unhealthyGPU(3, "NvidiaDoubleBitError")),
		free:        7,
	}, {
		description: "False without a GPU (device count mismatch) makes nothing free",
		node:        withGPUHealth(plainGPUNode("n", "NVIDIA-A100-SXM4-40GB", 8, 40960, nil), corev1.ConditionFalse, gpuhealth.ReasonDeviceCountMismatch, "7 of 8 GPUs", since),
		free:        0,
	}, {
		description: "DRA: the device of the unhealthy GPU is not free, allocated ones stay allocated",
		node:        withGPUHealth(draOnlyNode("n", nil), corev1.ConditionFalse, xid, xid79Message, since, unhealthyGPU(1, xid)),
		devices:     []slicedDevice{h100(0, true), h100(1, false), h100(2, false), h100(3, false)},
		free:        2,
		dra:         DeviceCounts{Published: 4, Allocated: 1, Unhealthy: 1, Free: 2},
	}, {
		description: "DRA: an unhealthy GPU that is allocated takes nothing more off free",
		node:        withGPUHealth(draOnlyNode("n", nil), corev1.ConditionFalse, xid, xid79Message, since, unhealthyGPU(0, xid)),
		devices:     []slicedDevice{h100(0, true), h100(1, false)},
		free:        1,
		dra:         DeviceCounts{Published: 2, Allocated: 1, Unhealthy: 1, Free: 1},
	}, {
		description: "DRA: a GPU listed by PCI bus ID alone (NVML's spelling) matches its device",
		node: withGPUHealth(draOnlyNode("n", nil), corev1.ConditionFalse, xid, xid79Message, since,
			gpuhealth.UnhealthyGPU{GPURef: gpuhealth.GPURef{Index: 1, PCIBusID: "00000000:1B:00.0"}, Reason: xid}),
		devices: []slicedDevice{h100(0, false), h100(1, false)},
		free:    1,
		dra:     DeviceCounts{Published: 2, Unhealthy: 1, Free: 1},
	}, {
		description: "DRA: a listed GPU that matches no device still takes a whole GPU off free",
		node: withGPUHealth(draOnlyNode("n", nil), corev1.ConditionFalse, xid, xid79Message, since,
			gpuhealth.UnhealthyGPU{GPURef: gpuhealth.GPURef{Index: 1}, Reason: xid}),
		devices: []slicedDevice{h100(0, false), h100(1, false)},
		free:    1,
		dra:     DeviceCounts{Published: 2, Free: 2},
	}, {
		description: "DRA: False without a GPU makes no device free",
		node:        withGPUHealth(draOnlyNode("n", nil), corev1.ConditionFalse, gpuhealth.ReasonDeviceCountMismatch, "1 of 2 GPUs", since),
		devices:     []slicedDevice{h100(0, false), h100(1, false)},
		free:        0,
		dra:         DeviceCounts{Published: 2, Free: 0},
	}, {
		description: "both paths: the unhealthy device and the device plugin's pod both come off free",
		node:        withGPUHealth(plainGPUNode("n", "NVIDIA-H100-80GB-HBM3", 4, 81559, nil), corev1.ConditionFalse, xid, xid79Message, since, unhealthyGPU(2, xid)),
		devices:     []slicedDevice{h100(0, false), h100(1, false), h100(2, false), h100(3, false)},
		dpAllocated: 1,
		free:        2,
		dra:         DeviceCounts{Published: 4, Unhealthy: 1, Free: 3},
	}} {
		t.Run(tc.description, func(t *testing.T) {
			n := inventoryNodeOf(t, tc.node, tc.devices, tc.dpAllocated)
			require.Equal(t, tc.free, n.Free)
			require.Equal(t, tc.dra, n.DRA)
			require.Equal(t, tc.dpAllocated > 0 || tc.devices != nil && countAllocated(tc.devices) > 0, n.Allocated > 0, "allocated is what holds GPUs, health aside")
		})
	}
}

func TestInventoryReportsGPUHealth(t *testing.T) {
	since := time.Date(2026, 11, 26, 10, 42, 0, 0, time.UTC)
	xid := gpuhealth.XIDErrorReason(79)
	node := withGPUHealth(plainGPUNode("n", "NVIDIA-A100-SXM4-40GB", 8, 40960, nil), corev1.ConditionFalse, xid, xid79Message, since, unhealthyGPU(3, xid))
	n := inventoryNodeOf(t, node, nil, 0)
	require.True(t, n.Health.Reported)
	require.Equal(t, corev1.ConditionFalse, n.Health.Status)
	require.Equal(t, xid, n.Health.Reason)
	require.Equal(t, xid79Message, n.Health.Message)
	require.True(t, since.Equal(n.Health.Since))
	require.Equal(t, []gpuhealth.UnhealthyGPU{unhealthyGPU(3, xid)}, n.Health.Unhealthy)

	plain := inventoryNodeOf(t, plainGPUNode("m", "NVIDIA-A100-SXM4-40GB", 8, 40960, nil), nil, 0)
	require.False(t, plain.Health.Reported)

	inv := Inventory{Nodes: []GPUNode{n, plain}}
	require.Equal(t, int64(7+8), inv.Totals().Free, "totals sum the free that health left")
	require.Equal(t, []string{"m"}, nodeNames(NodeFilter{MinFreeGPUs: 8}.Select(inv.Nodes)), "min_free_gpus follows the health rule")
}

// slicedDevice is a device a ResourceSlice publishes, and whether a claim holds it.
type slicedDevice struct {
	device    resourcev1.Device
	allocated bool
}

func countAllocated(devices []slicedDevice) int {
	n := 0
	for _, d := range devices {
		if d.allocated {
			n++
		}
	}
	return n
}

func nodeNames(nodes []GPUNode) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

func itoa(i int64) string { return resource.NewQuantity(i, resource.DecimalSI).String() }
