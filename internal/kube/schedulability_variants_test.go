package kube

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// The diagnoses of issue 12: each must be true in every variant, so each
// variant is a case here.

// unservedGPUNode is a GPU node that no device plugin serves: hardware
// says GPU, nothing is allocatable.
func unservedGPUNode(name, hardware string) NodeFacts {
	return NodeFacts{
		Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}, Taints: []corev1.Taint{gpuTaint},
		Ready: true, Schedulable: true, HasGPU: true, GPUHardware: hardware,
	}
}

func TestDiagnoseListsTheClosestNodesFirst(t *testing.T) {
	// Five 1-GPU nodes whose names sort first, then four 8-GPU nodes: a
	// request for 16 names the 8-GPU nodes, which come closest.
	var nodes []NodeFacts
	for i := range 5 {
		nodes = append(nodes, gpuNodeFacts(fmt.Sprintf("gpu-a-%d", i), "NVIDIA-A10G", 23028, "8.6", 1, 1))
	}
	for i := range 4 {
		nodes = append(nodes, gpuNodeFacts(fmt.Sprintf("gpu-z-%d", i), "NVIDIA-H100-80GB-HBM3", 81559, "9.0", 8, 8))
	}
	d := Diagnose(nodes, request(16))
	require.False(t, d.CouldEverFit())
	require.Equal(t, "0 of 9 nodes can run it: 9 have fewer than 16 nvidia.com/gpu allocatable in all (gpu-z-0: 8, gpu-z-1: 8, gpu-z-2: 8, gpu-z-3: 8, gpu-a-0: 1 and 4 more)", d.String())

	// Busy nodes: the one with the most free GPUs first.
	nodes[5].Free, nodes[6].Free, nodes[7].Free, nodes[8].Free = 0, 7, 3, 7
	d = Diagnose(nodes[5:], request(8))
	require.Equal(t, "0 of 4 nodes can run it: 4 lack nvidia.com/gpu ≥ 8 free (gpu-z-1: 7 free, gpu-z-3: 7 free, gpu-z-2: 3 free, gpu-z-0: 0 free)", d.String())
}

func TestDiagnoseGPUNodesWithoutDevicePlugin(t *testing.T) {
	withLabels := func(n NodeFacts, labels map[string]string) NodeFacts {
		for k, v := range labels {
			n.Labels[k] = v
		}
		return n
	}
	unserved := func() []NodeFacts {
		return []NodeFacts{
			{Name: "cpu-0", Ready: true, Schedulable: true},
			unservedGPUNode("gpu-gfd", "nvidia.com/gpu.product=NVIDIA-A10G"),
			unservedGPUNode("gpu-nfd", "feature.node.kubernetes.io/pci-10de.present=true"),
			unservedGPUNode("gpu-operator", "nvidia.com/gpu.present=true"),
			unservedGPUNode("gpu-type", "instance type g5.xlarge (1 NVIDIA-A10G)"),
		}
	}
	tests := []struct {
		description  string
		nodes        []NodeFacts
		request      GPURequest
		couldEverFit bool
		sentence     string
		remedy       string
		waitingFor   string
	}{
		{
			description: "GPU nodes known by GFD, NFD, GPU Operator or instance type labels, none advertising nvidia.com/gpu: no device plugin runs there.",
			nodes:       unserved(),
			request:     request(1),
			sentence: "0 of 5 nodes can run it: 1 has no NVIDIA GPU (cpu-0), 4 are GPU nodes where no NVIDIA device plugin runs, so they advertise no nvidia.com/gpu " +
				"(gpu-gfd: nvidia.com/gpu.product=NVIDIA-A10G, gpu-nfd: feature.node.kubernetes.io/pci-10de.present=true, gpu-operator: nvidia.com/gpu.present=true, gpu-type: instance type g5.xlarge (1 NVIDIA-A10G))",
			remedy: "No node of the cluster advertises nvidia.com/gpu: no NVIDIA device plugin runs on its 4 GPU nodes (gpu-gfd, gpu-nfd, gpu-operator, gpu-type). " +
				"Deploy one with a gpu_device_plugin resource (its node_selector and tolerations must reach those nodes) and add it to this workload's depends_on.",
		},
		{
			description: "A share of a time-sliced GPU or a MIG instance on unserved GPU nodes: the same diagnosis.",
			nodes:       unserved()[3:],
			request:     GPURequest{Resource: "nvidia.com/mig-1g.10gb", Count: 1, Tolerations: []corev1.Toleration{gpuToleration}},
			sentence:    "0 of 2 nodes can run it: 2 are GPU nodes where no NVIDIA device plugin runs, so they advertise no nvidia.com/gpu (gpu-operator: nvidia.com/gpu.present=true, gpu-type: instance type g5.xlarge (1 NVIDIA-A10G))",
			remedy: "No node of the cluster advertises nvidia.com/gpu: no NVIDIA device plugin runs on its 2 GPU nodes (gpu-operator, gpu-type). " +
				"Deploy one with a gpu_device_plugin resource (its node_selector and tolerations must reach those nodes) and add it to this workload's depends_on.",
		},
		{
			description: "Products asked for on nodes without GFD labels: the missing plugin (and GFD with it) is blamed, not the products.",
			nodes:       unserved()[4:],
			request: func() GPURequest {
				r := request(1)
				r.Products = []string{"NVIDIA-A10G"}
				r.MinMemoryMiB = 16 * 1024
				return r
			}(),
			sentence: "0 of 1 node can run it: 1 is a GPU node where no NVIDIA device plugin runs, so it advertises no nvidia.com/gpu (gpu-type: instance type g5.xlarge (1 NVIDIA-A10G))",
			remedy: "No node of the cluster advertises nvidia.com/gpu: no NVIDIA device plugin runs on its 1 GPU node (gpu-type). " +
				"Deploy one with a gpu_device_plugin resource (its node_selector and tolerations must reach those nodes) and add it to this workload's depends_on.",
		},
		{
			description: "A product the labels contradict excludes the node whatever runs there; the remedy is to change the workload.",
			nodes: []NodeFacts{func() NodeFacts {
				n := unservedGPUNode("gpu-gfd", "nvidia.com/gpu.product=NVIDIA-A10G")
				n.Product = "NVIDIA-A10G"
				return n
			}()},
			request: func() GPURequest {
				r := request(1)
				r.Products = []string{"NVIDIA-H100-80GB-HBM3"}
				return r
			}(),
			sentence: "0 of 1 node can run it: 1 is not in gpu.products [NVIDIA-H100-80GB-HBM3] (gpu-gfd: NVIDIA-A10G)",
			remedy:   "Change the gpu block (products, min_memory_gib, min_compute_capability, count), node_selector or tolerations, or add nodes that match.",
		},
		{
			description: "Some nodes advertise GPUs but too few: the unserved node is named, and changing the workload remains an option.",
			nodes:       append(unserved()[4:], gpuNodeFacts("gpu-g5-0", "NVIDIA-A10G", 23028, "8.6", 1, 1)),
			request:     request(2),
			sentence: "0 of 2 nodes can run it: 1 is a GPU node where no NVIDIA device plugin runs, so it advertises no nvidia.com/gpu (gpu-type: instance type g5.xlarge (1 NVIDIA-A10G)), " +
				"1 has fewer than 2 nvidia.com/gpu allocatable in all (gpu-g5-0: 1)",
			remedy: "No NVIDIA device plugin runs on 1 GPU node (gpu-type). Deploy one with a gpu_device_plugin resource (its node_selector and tolerations must reach those nodes) " +
				"and add it to this workload's depends_on. Otherwise change the gpu block (products, min_memory_gib, min_compute_capability, count), node_selector or tolerations, or add nodes that match.",
		},
		{
			description: "Unserved GPU nodes outside the node_selector are not blamed.",
			nodes:       append(unserved()[1:2], withLabels(gpuNodeFacts("gpu-g5-0", "NVIDIA-A10G", 23028, "8.6", 1, 1), map[string]string{"pool": "a"})),
			request: func() GPURequest {
				r := request(2)
				r.NodeSelector = map[string]string{"pool": "a"}
				return r
			}(),
			sentence: "0 of 2 nodes can run it: 1 does not match node_selector {pool=a} (gpu-gfd), 1 has fewer than 2 nvidia.com/gpu allocatable in all (gpu-g5-0: 1)",
			remedy:   "Change the gpu block (products, min_memory_gib, min_compute_capability, count), node_selector or tolerations, or add nodes that match.",
		},
		{
			description: "A device plugin pod that has not advertised GPUs yet is worth waiting for.",
			nodes: func() []NodeFacts {
				n := unservedGPUNode("gpu-gfd", "nvidia.com/gpu.product=NVIDIA-A10G")
				n.DevicePluginPod = "kube-system/nvidia-device-plugin-x7k2p"
				return []NodeFacts{n}
			}(),
			request:      request(1),
			couldEverFit: true,
			sentence:     "0 of 1 node can run it: 1 runs a device plugin pod but advertises no nvidia.com/gpu yet (gpu-gfd: kube-system/nvidia-device-plugin-x7k2p)",
			waitingFor:   "the device plugin on gpu-gfd advertises GPUs",
		},
		{
			description: "A node whose plugin has gone keeps its GPUs in capacity with none allocatable: no plugin serves it.",
			nodes: []NodeFacts{
				unservedGPUNode("gpu-p5-0", "nvidia.com/gpu capacity 8, none allocatable"),
			},
			request:  request(1),
			sentence: "0 of 1 node can run it: 1 is a GPU node where no NVIDIA device plugin runs, so it advertises no nvidia.com/gpu (gpu-p5-0: nvidia.com/gpu capacity 8, none allocatable)",
			remedy: "No node of the cluster advertises nvidia.com/gpu: no NVIDIA device plugin runs on its 1 GPU node (gpu-p5-0). " +
				"Deploy one with a gpu_device_plugin resource (its node_selector and tolerations must reach those nodes) and add it to this workload's depends_on.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			d := Diagnose(tt.nodes, tt.request)
			require.Equal(t, tt.couldEverFit, d.CouldEverFit())
			require.Equal(t, tt.sentence, d.String())
			if !tt.couldEverFit {
				require.Equal(t, tt.remedy, d.Remedy())
			}
			require.Equal(t, tt.waitingFor, d.WaitingFor())
		})
	}
}

func TestDiagnosePermanentReasonsBeforeTransientOnes(t *testing.T) {
	tests := []struct {
		description  string
		node         func(n *NodeFacts)
		request      GPURequest
		couldEverFit bool
		sentence     string
	}{
		{
			description: "A cordoned node with too few GPUs can never take the pod: uncordoning it would not help.",
			node:        func(n *NodeFacts) { n.Schedulable = false },
			request:     request(16),
			sentence:    "0 of 1 node can run it: 1 has fewer than 16 nvidia.com/gpu allocatable in all (gpu-p5-0: 8)",
		},
		{
			description: "A not-Ready node with a taint the pod does not tolerate is excluded by the taint, even when the not-ready taint comes first.",
			node: func(n *NodeFacts) {
				n.Ready = false
				n.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}, {Key: "dedicated", Value: "infer", Effect: corev1.TaintEffectNoSchedule}, gpuTaint}
			},
			request:  request(1),
			sentence: "0 of 1 node can run it: 1 has a taint the workload does not tolerate (add it to tolerations) (gpu-p5-0: dedicated=infer:NoSchedule)",
		},
		{
			description: "The unschedulable taint the node controller puts on a cordoned node counts as cordoned.",
			node: func(n *NodeFacts) {
				n.Taints = append(n.Taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
			},
			request:      request(1),
			couldEverFit: true,
			sentence:     "0 of 1 node can run it: 1 is cordoned (gpu-p5-0)",
		},
		{
			description: "A pod that tolerates the unschedulable taint may run on a cordoned node, as the scheduler's NodeUnschedulable filter allows.",
			node:        func(n *NodeFacts) { n.Schedulable = false },
			request: func() GPURequest {
				r := request(1)
				r.Tolerations = append(r.Tolerations, corev1.Toleration{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists})
				return r
			}(),
			couldEverFit: true,
			sentence:     "1 of 1 node can run it now (gpu-p5-0)",
		},
		{
			description: "Whole GPUs on a node whose device plugin advertises only time-sliced shares: none allocatable, and it says what it advertises.",
			node: func(n *NodeFacts) {
				n.Product = "NVIDIA-H100-80GB-HBM3-SHARED"
				n.Allocatable, n.Free = 0, 0
				n.Advertised = map[corev1.ResourceName]int64{"nvidia.com/gpu.shared": 32}
			},
			request:  request(1),
			sentence: "0 of 1 node can run it: 1 has fewer than 1 nvidia.com/gpu allocatable in all (gpu-p5-0: 0; it advertises nvidia.com/gpu.shared: 32)",
		},
		{
			description: "A -SHARED product matches the plain product only for a share of a GPU, as the pods' node affinity does.",
			node:        func(n *NodeFacts) { n.Product = "NVIDIA-H100-80GB-HBM3-SHARED" },
			request: func() GPURequest {
				r := request(1)
				r.Products = []string{"NVIDIA-H100-80GB-HBM3"}
				return r
			}(),
			sentence: "0 of 1 node can run it: 1 is not in gpu.products [NVIDIA-H100-80GB-HBM3] (gpu-p5-0: NVIDIA-H100-80GB-HBM3-SHARED)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			n := gpuNodeFacts("gpu-p5-0", "NVIDIA-H100-80GB-HBM3", 81559, "9.0", 8, 8)
			tt.node(&n)
			d := Diagnose([]NodeFacts{n}, tt.request)
			require.Equal(t, tt.couldEverFit, d.CouldEverFit())
			require.Equal(t, tt.sentence, d.String())
		})
	}
}

func TestDiagnosisWaitingFor(t *testing.T) {
	f := testFleet()[4:]
	f[0].Free = 0
	f[1].Schedulable = false
	d := Diagnose(f, request(1))
	require.True(t, d.CouldEverFit())
	require.Equal(t, "GPUs are freed on gpu-p4d-0 or gpu-p5-0 is uncordoned", d.WaitingFor())

	f[1].Schedulable, f[1].Ready = true, false
	f = append(f, func() NodeFacts {
		n := unservedGPUNode("gpu-new", "nvidia.com/gpu.present=true")
		n.DevicePluginPod = "gpu/nvidia-device-plugin-abcde"
		return n
	}())
	require.Equal(t, "GPUs are freed on gpu-p4d-0, gpu-p5-0 is Ready again or the device plugin on gpu-new advertises GPUs", Diagnose(f, request(1)).WaitingFor())
}
