package telemetry

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// Thresholds of the findings. A finding is a sentence worth a person's
// attention; below these a reading is ordinary.
const (
	// memoryHighPercent: memory used at or above this share of the total
	// leaves a job no room to grow; the next allocation may fail.
	memoryHighPercent = 95
	// idleUtilPercent and idleHeldMiB: a GPU whose utilization never rose
	// above 5% while its processes held at least 1 GiB is reserved but
	// not working (a stuck job, a notebook left open). It takes two
	// samples to say "throughout".
	idleUtilPercent = 5
	idleHeldMiB     = 1024
	idleMinSamples  = 2
	// hotTemperatureC: datacenter GPUs start slowing down for heat in
	// the high 80s °C (A100, H100 slowdown thresholds are about 90 °C).
	hotTemperatureC = 85
)

// throttleFindings say each slowdown reason in a sentence, and from what
// share of samples it is worth one. Power capping and sync boost are
// routine in small doses; any thermal slowdown, hardware slowdown or power
// brake points at cooling or the power supply.
var throttleFindings = map[string]struct {
	phrase     string
	minPercent float64 // the share from which the finding is made; 0: any
}{
	"sw_power_cap":            {"was power-capped", 10},
	"sync_boost":              {"was held to its sync-boost group's clocks", 10},
	"sw_thermal_slowdown":     {"was slowed down for heat (software thermal slowdown)", 0},
	"hw_thermal_slowdown":     {"was slowed down for heat by the hardware (hardware thermal slowdown)", 0},
	"hw_slowdown":             {"was in hardware slowdown (heat, power brake or a power supply fault)", 0},
	"hw_power_brake_slowdown": {"was held by the power brake (the system's power supply asked it to slow down)", 0},
}

// findings are a summary's plain-language findings, GPU by GPU: a GPU
// lost, XIDs, new uncorrectable ECC errors, throttling, heat, memory
// nearly full, and a GPU idle while processes held memory on it.
func findings(s Summary) []string {
	out := []string{}
	for _, g := range s.GPUs {
		if g.LostAt != nil {
			out = append(out, fmt.Sprintf("GPU %d was lost at %s: it fell off the bus and needs a reset or a reboot", g.Index, clock(*g.LostAt)))
		}
		for _, xid := range slices.Sorted(maps.Keys(g.XIDs)) {
			out = append(out, fmt.Sprintf("GPU %d reported XID %d%s: %s", g.Index, xid, times(g.XIDs[xid]), describeXID(xid)))
		}
		if n := eventsOf(s.Events, g.Index, nvml.EventECCDoubleBit); n > 0 {
			out = append(out, fmt.Sprintf("GPU %d reported %d uncorrectable ECC error event%s", g.Index, n, plural(n)))
		}
		if g.NewUncorrectableECC > 0 {
			out = append(out, fmt.Sprintf("GPU %d counted %d new uncorrectable ECC error%s", g.Index, g.NewUncorrectableECC, plural(int(g.NewUncorrectableECC))))
		}
		for _, share := range g.Throttle {
			f, ok := throttleFindings[share.Reason]
			if !ok || share.Percent == 0 || share.Percent < f.minPercent {
				continue
			}
			out = append(out, fmt.Sprintf("GPU %d %s %s of the time", g.Index, f.phrase, percentText(share.Percent)))
		}
		if g.TemperatureC != nil && g.TemperatureC.Max >= hotTemperatureC {
			out = append(out, fmt.Sprintf("GPU %d reached %.0f °C", g.Index, g.TemperatureC.Max))
		}
		if p := g.PeakMemory; p != nil && p.TotalMiB != nil && *p.TotalMiB > 0 {
			if share := percent(int(p.UsedMiB), int(*p.TotalMiB)); share >= memoryHighPercent {
				out = append(out, fmt.Sprintf("GPU %d memory reached %s of %s", g.Index, percentText(share), GiB(*p.TotalMiB)))
			}
		}
		if g.Samples >= idleMinSamples && g.UtilizationGPU != nil && g.UtilizationGPU.Max <= idleUtilPercent && g.ProcessMemoryMaxMiB >= idleHeldMiB {
			out = append(out, fmt.Sprintf("GPU %d idle throughout while processes held %s on it", g.Index, GiB(g.ProcessMemoryMaxMiB)))
		}
	}
	for _, ev := range s.Events {
		if ev.Kind == nvml.EventXID && ev.GPUIndex < 0 {
			out = append(out, fmt.Sprintf("a GPU NVML did not identify reported XID %d: %s", ev.XID, describeXID(ev.XID)))
		}
	}
	return out
}

// percentText rounds a share for a sentence: "41%"; a share above zero
// that would round to zero is "<1%".
func percentText(p float64) string {
	if p > 0 && p < 0.5 {
		return "<1%"
	}
	return strconv.Itoa(int(math.Round(p))) + "%"
}

// GiB spells MiB as GiB: "80 GiB", "12.5 GiB".
func GiB(mib uint64) string {
	return strconv.FormatFloat(math.Round(float64(mib)/1024*10)/10, 'f', -1, 64) + " GiB"
}

func eventsOf(events []nvml.Event, gpu int, kind nvml.EventKind) int {
	n := 0
	for _, ev := range events {
		if ev.GPUIndex == gpu && ev.Kind == kind {
			n++
		}
	}
	return n
}

func times(n int) string {
	if n == 1 {
		return ""
	}
	return fmt.Sprintf(" %d times", n)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// clock is the time of day of a moment: "08:00:03".
func clock(t time.Time) string { return t.Format("15:04:05") }
