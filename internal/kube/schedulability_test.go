package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

var gpuTaint = corev1.Taint{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}

var gpuToleration = corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// gpuNodeFacts is a GPU node labeled by GFD whose device plugin advertises
// allocatable nvidia.com/gpu (none when allocatable is 0).
func gpuNodeFacts(name, product string, memoryMiB int64, cc string, allocatable, free int64) NodeFacts {
	f := NodeFacts{
		Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}, Taints: []corev1.Taint{gpuTaint},
		Ready: true, Schedulable: true, HasGPU: true,
		Product: product, MemoryMiB: memoryMiB, ComputeCapability: cc,
		Allocatable: allocatable, Free: free,
		GPUHardware: "nvidia.com/gpu.product=" + product,
	}
	if allocatable > 0 {
		f.Advertised = map[corev1.ResourceName]int64{ResourceGPU: allocatable}
	}
	return f
}

// testFleet is the provider tests' testbed fleet, all GPUs free.
func testFleet() []NodeFacts {
	return []NodeFacts{
		{Name: "cpu-0", Ready: true, Schedulable: true},
		gpuNodeFacts("gpu-g4dn-0", "Tesla-T4", 15360, "7.5", 1, 1),
		gpuNodeFacts("gpu-g5-0", "NVIDIA-A10G", 23028, "8.6", 1, 1),
		gpuNodeFacts("gpu-g5-1", "NVIDIA-A10G", 23028, "8.6", 1, 1),
		gpuNodeFacts("gpu-p4d-0", "NVIDIA-A100-SXM4-40GB", 40960, "8.0", 8, 8),
		gpuNodeFacts("gpu-p5-0", "NVIDIA-H100-80GB-HBM3", 81559, "9.0", 8, 8),
	}
}

func request(count int64) GPURequest {
	return GPURequest{Resource: ResourceGPU, Count: count, Tolerations: []corev1.Toleration{gpuToleration}}
}

func TestDiagnose(t *testing.T) {
	cc := func(s string) *ComputeCapability {
		c, err := ParseComputeCapability(s)
		require.NoError(t, err)
		return &c
	}
	tests := []struct {
		description  string
		nodes        []NodeFacts
		request      GPURequest
		fit          []string
		couldEverFit bool
		sentence     string
	}{
		{
			description:  "Two GPUs of any kind fit on the two 8-GPU nodes; the 1-GPU nodes have too few in all.",
			nodes:        testFleet(),
			request:      request(2),
			fit:          []string{"gpu-p4d-0", "gpu-p5-0"},
			couldEverFit: true,
			sentence:     "2 of 6 nodes can run it now (gpu-p4d-0, gpu-p5-0): 1 has no NVIDIA GPU (cpu-0), 3 have fewer than 2 nvidia.com/gpu allocatable in all (gpu-g4dn-0: 1, gpu-g5-0: 1, gpu-g5-1: 1)",
		},
		{
			description: "An H100-only request names the other products it saw.",
			nodes:       testFleet(),
			request: func() GPURequest {
				r := request(2)
				r.Products = []string{"NVIDIA-H100-80GB-HBM3"}
				return r
			}(),
			fit:          []string{"gpu-p5-0"},
			couldEverFit: true,
			sentence:     "1 of 6 nodes can run it now (gpu-p5-0): 1 has no NVIDIA GPU (cpu-0), 4 are not in gpu.products [NVIDIA-H100-80GB-HBM3] (gpu-g4dn-0: Tesla-T4, gpu-g5-0: NVIDIA-A10G, gpu-g5-1: NVIDIA-A10G, gpu-p4d-0: NVIDIA-A100-SXM4-40GB)",
		},
		{
			description: "A product no node has can never fit.",
			nodes:       testFleet(),
			request: func() GPURequest {
				r := request(1)
				r.Products = []string{"NVIDIA-B200"}
				return r
			}(),
			couldEverFit: false,
			sentence:     "0 of 6 nodes can run it: 1 has no NVIDIA GPU (cpu-0), 5 are not in gpu.products [NVIDIA-B200] (gpu-g4dn-0: Tesla-T4, gpu-g5-0: NVIDIA-A10G, gpu-g5-1: NVIDIA-A10G, gpu-p4d-0: NVIDIA-A100-SXM4-40GB, gpu-p5-0: NVIDIA-H100-80GB-HBM3)",
		},
		{
			description:  "Sixteen GPUs in one pod exceed every node's allocatable: it can never fit; the nodes with the most come first.",
			nodes:        testFleet(),
			request:      request(16),
			couldEverFit: false,
			sentence:     "0 of 6 nodes can run it: 1 has no NVIDIA GPU (cpu-0), 5 have fewer than 16 nvidia.com/gpu allocatable in all (gpu-p4d-0: 8, gpu-p5-0: 8, gpu-g4dn-0: 1, gpu-g5-0: 1, gpu-g5-1: 1)",
		},
		{
			description: "Nodes that match but are busy make it worth waiting; the one with more free comes first.",
			nodes: func() []NodeFacts {
				f := testFleet()
				f[4].Free, f[5].Free = 1, 0
				return f
			}(),
			request:      request(2),
			couldEverFit: true,
			sentence:     "0 of 6 nodes can run it: 1 has no NVIDIA GPU (cpu-0), 3 have fewer than 2 nvidia.com/gpu allocatable in all (gpu-g4dn-0: 1, gpu-g5-0: 1, gpu-g5-1: 1), 2 lack nvidia.com/gpu ≥ 2 free (gpu-p4d-0: 1 free, gpu-p5-0: 0 free)",
		},
		{
			description: "40 GiB of memory excludes the 16 and 24 GB GPUs, the larger first, and keeps the A100 40GB, whose 40960 MiB is exactly 40 GiB.",
			nodes:       testFleet(),
			request: func() GPURequest {
				r := request(1)
				r.MinMemoryMiB = 40 * 1024
				return r
			}(),
			fit:          []string{"gpu-p4d-0", "gpu-p5-0"},
			couldEverFit: true,
			sentence:     "2 of 6 nodes can run it now (gpu-p4d-0, gpu-p5-0): 1 has no NVIDIA GPU (cpu-0), 3 have less than gpu.min_memory_gib 40 GiB per GPU (gpu-g5-0: 23028 MiB, gpu-g5-1: 23028 MiB, gpu-g4dn-0: 15360 MiB)",
		},
		{
			description: "Compute capability 8.6 keeps 8.6 and 9.0 and excludes 8.0 and 7.5, the newer first: it compares major and minor together.",
			nodes:       testFleet(),
			request: func() GPURequest {
				r := request(1)
				r.MinCompute = cc("8.6")
				return r
			}(),
			fit:          []string{"gpu-g5-0", "gpu-g5-1", "gpu-p5-0"},
			couldEverFit: true,
			sentence:     "3 of 6 nodes can run it now (gpu-g5-0, gpu-g5-1, gpu-p5-0): 1 has no NVIDIA GPU (cpu-0), 2 have a compute capability below gpu.min_compute_capability 8.6 (gpu-p4d-0: 8.0, gpu-g4dn-0: 7.5)",
		},
		{
			description: "Without the GPU toleration every GPU node is excluded by its taint.",
			nodes:       testFleet(),
			request: func() GPURequest {
				r := request(1)
				r.Tolerations = nil
				return r
			}(),
			couldEverFit: false,
			sentence:     "0 of 6 nodes can run it: 1 has no NVIDIA GPU (cpu-0), 5 have a taint the workload does not tolerate (add it to tolerations) (gpu-g4dn-0: nvidia.com/gpu=true:NoSchedule, gpu-g5-0: nvidia.com/gpu=true:NoSchedule, gpu-g5-1: nvidia.com/gpu=true:NoSchedule, gpu-p4d-0: nvidia.com/gpu=true:NoSchedule, gpu-p5-0: nvidia.com/gpu=true:NoSchedule)",
		},
		{
			description: "A cordoned or not-ready node could come back, so waiting can help.",
			nodes: func() []NodeFacts {
				f := testFleet()[4:]
				f[0].Schedulable = false
				f[1].Ready = false
				return f
			}(),
			request:      request(1),
			couldEverFit: true,
			sentence:     "0 of 2 nodes can run it: 1 is not Ready (gpu-p5-0), 1 is cordoned (gpu-p4d-0)",
		},
		{
			description: "A node-lifecycle taint counts as not Ready, not as a taint to tolerate.",
			nodes: func() []NodeFacts {
				f := testFleet()[5:]
				f[0].Taints = append(f[0].Taints, corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute})
				return f
			}(),
			request:      request(1),
			couldEverFit: true,
			sentence:     "0 of 1 node can run it: 1 is not Ready (gpu-p5-0: node.kubernetes.io/unreachable:NoExecute)",
		},
		{
			description: "A node_selector that no node carries excludes every node.",
			nodes:       testFleet()[4:],
			request: func() GPURequest {
				r := request(1)
				r.NodeSelector = map[string]string{"pool": "training"}
				return r
			}(),
			couldEverFit: false,
			sentence:     "0 of 2 nodes can run it: 2 do not match node_selector {pool=training} (gpu-p4d-0, gpu-p5-0)",
		},
		{
			description: "A shared GPU's product label with GFD's -SHARED suffix matches the plain product.",
			nodes: func() []NodeFacts {
				n := gpuNodeFacts("gpu-g4dn-0", "Tesla-T4-SHARED", 15360, "7.5", 4, 4)
				return []NodeFacts{n}
			}(),
			request: GPURequest{
				Resource: "nvidia.com/gpu.shared", Count: 1, Products: []string{"Tesla-T4"},
				Tolerations: []corev1.Toleration{gpuToleration},
			},
			fit:          []string{"gpu-g4dn-0"},
			couldEverFit: true,
			sentence:     "1 of 1 node can run it now (gpu-g4dn-0)",
		},
		{
			description: "A GPU node whose device plugin advertises whole GPUs has no MIG instances, and says what it advertises instead.",
			nodes: func() []NodeFacts {
				n := gpuNodeFacts("gpu-p4d-0", "NVIDIA-A100-SXM4-40GB", 40960, "8.0", 0, 0)
				n.Advertised = map[corev1.ResourceName]int64{ResourceGPU: 8}
				return []NodeFacts{n}
			}(),
			request:      GPURequest{Resource: "nvidia.com/mig-1g.5gb", Count: 1, Tolerations: []corev1.Toleration{gpuToleration}},
			couldEverFit: false,
			sentence:     "0 of 1 node can run it: 1 has fewer than 1 nvidia.com/mig-1g.5gb allocatable in all (gpu-p4d-0: 0; it advertises nvidia.com/gpu: 8)",
		},
		{
			description:  "An empty cluster says so.",
			request:      request(1),
			couldEverFit: false,
			sentence:     "0 of 0 nodes can run it: the cluster has no nodes",
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			d := Diagnose(tt.nodes, tt.request)
			require.Equal(t, tt.fit, d.Fit)
			require.Equal(t, tt.couldEverFit, d.CouldEverFit())
			require.Equal(t, tt.sentence, d.String())
		})
	}
}

func TestDiagnoseNamesAtMostFiveNodes(t *testing.T) {
	var nodes []NodeFacts
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		nodes = append(nodes, NodeFacts{Name: name, Ready: true, Schedulable: true})
	}
	require.Equal(t, "0 of 7 nodes can run it: 7 have no NVIDIA GPU (a, b, c, d, e and 2 more)", Diagnose(nodes, request(1)).String())
}

func TestParseComputeCapability(t *testing.T) {
	tests := []struct {
		description string
		in          string
		want        ComputeCapability
		wantError   bool
	}{
		{"Major and minor are read.", "8.6", ComputeCapability{8, 6}, false},
		{"A two-digit major is read.", "10.0", ComputeCapability{10, 0}, false},
		{"A bare major is rejected.", "8", ComputeCapability{}, true},
		{"Three parts are rejected.", "8.0.1", ComputeCapability{}, true},
		{"A sign is rejected.", "+8.0", ComputeCapability{}, true},
		{"Letters are rejected.", "sm_80", ComputeCapability{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			got, err := ParseComputeCapability(tt.in)
			if tt.wantError {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
