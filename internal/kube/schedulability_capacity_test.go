package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestCapacityFor(t *testing.T) {
	a10g := func() GPURequest {
		r := request(1)
		r.Products = []string{"NVIDIA-A10G"}
		return r
	}
	tests := []struct {
		description string
		nodes       []NodeFacts
		request     GPURequest
		replicas    int64
		pods        int64
		now         int64
		bounded     bool
		beyond      string
		waiting     string
	}{
		{
			description: "Three A10G replicas on the two 1-A10G nodes: one can never be scheduled, whatever frees GPUs.",
			nodes:       testFleet(),
			request:     a10g(),
			replicas:    3,
			pods:        2, now: 2, bounded: true,
			beyond: "deployment.replicas is 3, but the nodes its pods can use hold at most 2 replicas of 1 nvidia.com/gpu at once, even with every GPU free " +
				"(gpu-g5-0: 1, gpu-g5-1: 1), so 1 replica can never be scheduled",
		},
		{
			description: "Two A10G replicas fit on the two A10G nodes even when other work holds their GPUs now: waiting for it is right.",
			nodes: func() []NodeFacts {
				f := testFleet()
				f[2].Free, f[3].Free = 0, 0
				return f
			}(),
			request:  a10g(),
			replicas: 2,
			pods:     2, now: 2, bounded: true,
		},
		{
			description: "Per-node packing: an 8-GPU node holds two pods of 3 GPUs, so the two 8-GPU nodes hold four.",
			nodes:       testFleet(),
			request:     request(3),
			replicas:    5,
			pods:        4, now: 4, bounded: true,
			beyond: "deployment.replicas is 5, but the nodes its pods can use hold at most 4 replicas of 3 nvidia.com/gpu at once, even with every GPU free " +
				"(gpu-p4d-0: 2 (8 nvidia.com/gpu allocatable), gpu-p5-0: 2 (8 nvidia.com/gpu allocatable)), so 1 replica can never be scheduled",
		},
		{
			description: "Only nodes the pod could use count: selector, memory, taints.",
			nodes: func() []NodeFacts {
				f := testFleet()
				f[4].Taints = append(f[4].Taints, corev1.Taint{Key: "dedicated", Value: "training", Effect: corev1.TaintEffectNoSchedule})
				return f
			}(),
			request: func() GPURequest {
				r := request(1)
				r.MinMemoryMiB = 20 * 1024
				return r
			}(),
			replicas: 11,
			pods:     10, now: 10, bounded: true,
			beyond: "deployment.replicas is 11, but the nodes its pods can use hold at most 10 replicas of 1 nvidia.com/gpu at once, even with every GPU free " +
				"(gpu-p5-0: 8, gpu-g5-0: 1, gpu-g5-1: 1), so 1 replica can never be scheduled",
		},
		{
			description: "A cordoned and a not-Ready node count towards what the nodes can ever hold, not towards what they hold now.",
			nodes: func() []NodeFacts {
				f := testFleet()
				f[2].Schedulable = false
				f[3].Taints = append(f[3].Taints, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute})
				return f
			}(),
			request:  a10g(),
			replicas: 2,
			pods:     2, now: 0, bounded: true,
			waiting: "The nodes that take pods now hold 0 of its 2 replicas (gpu-g5-0: 1 (cordoned), gpu-g5-1: 1 (not Ready)); " +
				"the rest run once gpu-g5-0 (cordoned), gpu-g5-1 (not Ready) take pods again",
		},
		{
			description: "A starting device plugin leaves the bound unknown: no replica is declared impossible.",
			nodes: func() []NodeFacts {
				n := unservedGPUNode("gpu-new", "nvidia.com/gpu.present=true")
				n.DevicePluginPod = "gpu/nvidia-device-plugin-abcde"
				return append(testFleet(), n)
			}(),
			request:  request(1),
			replicas: 100,
			pods:     19, now: 19, bounded: false,
		},
		{
			description: "Shares of time-sliced GPUs: a T4 sliced 4 ways holds 4 pods asking for one share.",
			nodes: func() []NodeFacts {
				n := gpuNodeFacts("gpu-g4dn-0", "Tesla-T4-SHARED", 15360, "7.5", 4, 1)
				n.Advertised = map[corev1.ResourceName]int64{"nvidia.com/gpu.shared": 4}
				return []NodeFacts{n}
			}(),
			request:  GPURequest{Resource: "nvidia.com/gpu.shared", Count: 1, Products: []string{"Tesla-T4"}, Tolerations: []corev1.Toleration{gpuToleration}},
			replicas: 5,
			pods:     4, now: 4, bounded: true,
			beyond: "deployment.replicas is 5, but the nodes its pods can use hold at most 4 replicas of 1 nvidia.com/gpu.shared at once, even with every GPU free " +
				"(gpu-g4dn-0: 4), so 1 replica can never be scheduled",
		},
		{
			description: "MIG instances: seven 1g.5gb instances hold three pods of two.",
			nodes: func() []NodeFacts {
				n := gpuNodeFacts("gpu-p4d-0", "NVIDIA-A100-SXM4-40GB", 40960, "8.0", 7, 7)
				n.Advertised = map[corev1.ResourceName]int64{"nvidia.com/mig-1g.5gb": 7}
				return []NodeFacts{n, gpuNodeFacts("gpu-p5-0", "NVIDIA-H100-80GB-HBM3", 81559, "9.0", 0, 0)}
			}(),
			request:  GPURequest{Resource: "nvidia.com/mig-1g.5gb", Count: 2, Tolerations: []corev1.Toleration{gpuToleration}},
			replicas: 4,
			pods:     3, now: 3, bounded: true,
			beyond: "deployment.replicas is 4, but the nodes its pods can use hold at most 3 replicas of 2 nvidia.com/mig-1g.5gb at once, even with every GPU free " +
				"(gpu-p4d-0: 3 (7 nvidia.com/mig-1g.5gb allocatable)), so 1 replica can never be scheduled",
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			c := CapacityFor(tt.nodes, tt.request)
			require.Equal(t, tt.pods, c.Pods)
			require.Equal(t, tt.now, c.Now())
			require.Equal(t, tt.bounded, c.Bounded())
			require.Equal(t, tt.beyond, ReplicasBeyondCapacity(c, tt.request, tt.replicas))
			require.Equal(t, tt.waiting, ReplicasWaitingForNodes(c, tt.request, tt.replicas))
		})
	}
}

func TestCapacityListsTheLargestNodesFirst(t *testing.T) {
	var nodes []NodeFacts
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		nodes = append(nodes, gpuNodeFacts("gpu-"+name, "NVIDIA-A10G", 23028, "8.6", 1, 0))
	}
	nodes = append(nodes, gpuNodeFacts("gpu-z", "NVIDIA-A10G", 23028, "8.6", 4, 0))
	c := CapacityFor(nodes, request(1))
	require.Equal(t, "deployment.replicas is 20, but the nodes its pods can use hold at most 10 replicas of 1 nvidia.com/gpu at once, even with every GPU free "+
		"(gpu-z: 4, gpu-a: 1, gpu-b: 1, gpu-c: 1, gpu-d: 1 and 2 more), so 10 replicas can never be scheduled", ReplicasBeyondCapacity(c, request(1), 20))
}
