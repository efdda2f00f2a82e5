package kube

import (
	"regexp"
)

// NodeFilter selects GPU nodes after they are listed. Zero fields select all.
type NodeFilter struct {
	// Product matches the GFD product name, e.g. "H100|A100".
	Product *regexp.Regexp
	// MinGPUMemoryGiB is compared with the per-GPU memory the driver reports
	// (an A10G reports 22.5 GiB, not the 24 GB on its box).
	MinGPUMemoryGiB float64
	// MinFreeGPUs keeps nodes with at least this many unallocated GPUs.
	MinFreeGPUs int64
}

// Select returns the nodes that pass every set criterion, in order.
func (f NodeFilter) Select(nodes []GPUNode) []GPUNode {
	out := make([]GPUNode, 0, len(nodes))
	for _, n := range nodes {
		if f.Product != nil && !f.Product.MatchString(n.Product) {
			continue
		}
		if f.MinGPUMemoryGiB > 0 && float64(n.MemoryMiB) < f.MinGPUMemoryGiB*1024 {
			continue
		}
		if n.Free < f.MinFreeGPUs {
			continue
		}
		out = append(out, n)
	}
	return out
}
