package gpuselect

import (
	"strconv"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// linkRank orders `nvidia-smi topo -m` levels: higher is a faster path.
// NV<n> ranks above every PCIe level, more links above fewer.
func linkRank(level string) int {
	if n, ok := strings.CutPrefix(level, "NV"); ok {
		if links, err := strconv.Atoi(n); err == nil && links > 0 {
			return 100 + links
		}
	}
	switch level {
	case "PIX":
		return 6
	case "PXB":
		return 5
	case "PHB":
		return 4
	case "NODE":
		return 3
	case "SYS":
		return 2
	}
	return 1 // NVML said nothing about the pair
}

// isNVLink says whether a rank is an NVLink connection.
func isNVLink(rank int) bool { return rank > 100 }

// linkTable answers the level between two GPU indices.
type linkTable map[[2]int]string

func newLinkTable(links []nvml.Link) linkTable {
	t := linkTable{}
	for _, l := range links {
		t[[2]int{l.GPU1, l.GPU2}] = l.Level
		t[[2]int{l.GPU2, l.GPU1}] = l.Level
	}
	return t
}

func (t linkTable) level(a, b int) string {
	if l, ok := t[[2]int{a, b}]; ok {
		return l
	}
	return "unknown"
}
