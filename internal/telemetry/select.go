package telemetry

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// SelectGPUs reads a --gpus list ("0,2", UUIDs, or a mix) against the GPUs
// a sample found and returns their indices in order, each once. An empty
// list selects every GPU. An index or UUID that is not there is an error
// naming it and listing what is.
func SelectGPUs(list string, gpus []nvml.GPUSample) ([]int, error) {
	var all []int
	for _, g := range gpus {
		all = append(all, g.Index)
	}
	if strings.TrimSpace(list) == "" {
		return all, nil
	}
	var chosen []int
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		index, ok := findGPU(item, gpus)
		if !ok {
			return nil, fmt.Errorf("no GPU %q on this machine; it has %s", item, available(gpus))
		}
		if !slices.Contains(chosen, index) {
			chosen = append(chosen, index)
		}
	}
	if len(chosen) == 0 {
		return nil, fmt.Errorf("no GPU named in %q; this machine has %s", list, available(gpus))
	}
	slices.Sort(chosen)
	return chosen, nil
}

func findGPU(item string, gpus []nvml.GPUSample) (int, bool) {
	for _, g := range gpus {
		if strings.EqualFold(item, g.UUID) {
			return g.Index, true
		}
	}
	if n, err := strconv.Atoi(item); err == nil {
		for _, g := range gpus {
			if g.Index == n {
				return n, true
			}
		}
	}
	return 0, false
}

// available lists GPUs as "0 (GPU-…), 1 (GPU-…)".
func available(gpus []nvml.GPUSample) string {
	if len(gpus) == 0 {
		return "none"
	}
	var parts []string
	for _, g := range gpus {
		parts = append(parts, fmt.Sprintf("%d (%s)", g.Index, g.UUID))
	}
	return strings.Join(parts, ", ")
}
