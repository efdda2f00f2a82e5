package kube

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNodeFilterSelect(t *testing.T) {
	nodes := []GPUNode{
		{Name: "h100", Product: "NVIDIA-H100-80GB-HBM3", MemoryMiB: 81559, Free: 8},
		{Name: "a100", Product: "NVIDIA-A100-SXM4-40GB", MemoryMiB: 40960, Free: 0},
		{Name: "a10g", Product: "NVIDIA-A10G", MemoryMiB: 23028, Free: 1},
		{Name: "t4", Product: "Tesla-T4", MemoryMiB: 15360, Free: 1},
	}
	names := func(ns []GPUNode) []string {
		out := []string{}
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return out
	}
	tests := []struct {
		description string
		filter      NodeFilter
		want        []string
	}{
		{"An empty filter keeps every node.", NodeFilter{}, []string{"h100", "a100", "a10g", "t4"}},
		{"A product regex selects by model.", NodeFilter{Product: regexp.MustCompile("H100|A100")}, []string{"h100", "a100"}},
		{"40 GiB keeps the 40 GiB A100 and drops the 22.5 GiB A10G.", NodeFilter{MinGPUMemoryGiB: 40}, []string{"h100", "a100"}},
		{"22.5 GiB keeps the A10G as its driver reports it.", NodeFilter{MinGPUMemoryGiB: 22.48}, []string{"h100", "a100", "a10g"}},
		{"Free GPUs drop the full node.", NodeFilter{MinFreeGPUs: 1}, []string{"h100", "a10g", "t4"}},
		{"Criteria combine.", NodeFilter{MinGPUMemoryGiB: 40, MinFreeGPUs: 1}, []string{"h100"}},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			require.Equal(t, tc.want, names(tc.filter.Select(nodes)))
		})
	}
}
