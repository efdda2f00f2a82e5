package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLabelKeepSelect(t *testing.T) {
	labels := map[string]string{
		"kubernetes.io/hostname":                      "gpu-p5-0",
		"nvidia.com/gpu.product":                      "NVIDIA-H100-80GB-HBM3",
		"nvidia.com/gpu.memory":                       "81559",
		"feature.node.kubernetes.io/pci-10de.present": "true",
		"pool": "training",
	}
	for _, tc := range []struct {
		description string
		keep        LabelKeep
		want        map[string]string
	}{
		{"the zero value keeps no label and returns nil, not an empty map", LabelKeep{}, nil},
		{"all keeps every label", LabelKeep{All: true}, labels},
		{"a key is kept when the node has it, a missing key is not invented",
			LabelKeep{Keys: []string{"pool", "nvidia.com/gpu.family"}}, map[string]string{"pool": "training"}},
		{"a prefix keeps every key starting with it",
			LabelKeep{Prefixes: []string{"nvidia.com/"}}, map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559"}},
		{"keys and prefixes add up",
			LabelKeep{Keys: []string{"pool"}, Prefixes: []string{"feature.node.kubernetes.io/pci-"}},
			map[string]string{"pool": "training", "feature.node.kubernetes.io/pci-10de.present": "true"}},
		{"a node without any kept key gets an empty map", LabelKeep{Keys: []string{"absent"}}, map[string]string{}},
	} {
		t.Run(tc.description, func(t *testing.T) {
			require.Equal(t, tc.want, tc.keep.Select(labels))
		})
	}
}

func TestInventoryByProduct(t *testing.T) {
	inv := Inventory{Nodes: []GPUNode{
		{Name: "a", Product: "NVIDIA-H100-80GB-HBM3", Count: 8, Allocatable: 8, Allocated: 3, Free: 5},
		{Name: "b", Product: "NVIDIA-H100-80GB-HBM3", Count: 8, Allocatable: 7, Allocated: 7, Free: 0},
		{Name: "c", Product: "NVIDIA-A10G", Count: 1, Allocatable: 1, Free: 1},
		{Name: "d", Count: 4, Allocatable: 0},
	}}
	require.Equal(t, map[string]Totals{
		"NVIDIA-H100-80GB-HBM3": {Nodes: 2, GPUs: 16, Allocatable: 15, Allocated: 10, Free: 5},
		"NVIDIA-A10G":           {Nodes: 1, GPUs: 1, Allocatable: 1, Free: 1},
		UnknownProduct:          {Nodes: 1, GPUs: 4},
	}, inv.ByProduct())
	require.Equal(t, Totals{Nodes: 4, GPUs: 21, Allocatable: 16, Allocated: 10, Free: 6}, inv.Totals())
	require.Empty(t, Inventory{}.ByProduct(), "no nodes, no products")
}
