package bootstrap

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// This file names GPUs and values in plan summaries and errors, the way
// nvidia-smi users read them: "GPU 3 (GPU-8f6c…)", "GPUs 0-7".

// gpuLabel is one GPU by index and UUID.
func gpuLabel(dev nvml.Device) string {
	if dev.UUID == "" {
		return fmt.Sprintf("GPU %d", dev.Index)
	}
	return fmt.Sprintf("GPU %d (%s)", dev.Index, dev.UUID)
}

// gpuLabels names GPUs: one by index and UUID, several by index with runs
// collapsed ("GPUs 0-3, 6").
func gpuLabels(devs []nvml.Device) string {
	if len(devs) == 1 {
		return gpuLabel(devs[0])
	}
	indexes := make([]int, len(devs))
	for i, d := range devs {
		indexes[i] = d.Index
	}
	return "GPUs " + indexRuns(indexes)
}

// indexRuns writes sorted indexes with consecutive runs collapsed.
func indexRuns(indexes []int) string {
	var parts []string
	for i := 0; i < len(indexes); {
		j := i
		for j+1 < len(indexes) && indexes[j+1] == indexes[j]+1 {
			j++
		}
		switch j {
		case i:
			parts = append(parts, strconv.Itoa(indexes[i]))
		case i + 1:
			parts = append(parts, strconv.Itoa(indexes[i]), strconv.Itoa(indexes[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", indexes[i], indexes[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// currentValues says what the GPUs have now: one value when they agree,
// "GPU 0: a, GPU 1: b" otherwise.
func currentValues(devs []nvml.Device, value func(nvml.Device) string) string {
	first := value(devs[0])
	same := true
	for _, d := range devs[1:] {
		if value(d) != first {
			same = false
			break
		}
	}
	if same {
		return first
	}
	parts := make([]string, len(devs))
	for i, d := range devs {
		parts[i] = fmt.Sprintf("GPU %d: %s", d.Index, value(d))
	}
	return strings.Join(parts, ", ")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// formatWatts writes watts without a needless fraction: "400", "412.5".
func formatWatts(w float64) string {
	return strconv.FormatFloat(w, 'f', -1, 64)
}

func mhzOrUnknown(v *uint32) string {
	if v == nil {
		return "?"
	}
	return strconv.FormatUint(uint64(*v), 10)
}

// doVerb and allowVerb agree with gpuLabels's subject.
func doVerb(devs []nvml.Device) string {
	if len(devs) == 1 {
		return "does"
	}
	return "do"
}

func allowVerb(devs []nvml.Device) string {
	if len(devs) == 1 {
		return "allows"
	}
	return "allow"
}
