package telemetry

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// deriveEvents compares one GPU's sample with its previous one (nil for its
// first) and reports what NVML's event set does not: slowdown throttle
// reasons starting and stopping, and the GPU being lost. Reasons active in
// the first sample are reported as started then.
func deriveEvents(prev *nvml.GPUSample, cur nvml.GPUSample, at time.Time) []nvml.Event {
	var events []nvml.Event
	event := func(kind nvml.EventKind, data uint64, detail string) {
		events = append(events, nvml.Event{
			Time: at, Kind: kind, GPUIndex: cur.Index, UUID: cur.UUID, Data: data, Detail: detail,
			GPUInstanceID: -1, ComputeInstanceID: -1,
		})
	}
	if cur.Lost && (prev == nil || !prev.Lost) {
		detail := "the GPU fell off the bus (NVML: GPU is lost); it needs a reset or a reboot"
		if cur.Error != "" {
			detail += " (" + cur.Error + ")"
		}
		event(nvml.EventGPULost, 0, detail)
	}
	var before uint64
	if prev != nil {
		before = slowdownMask(*prev)
	}
	// A sample without a reasons reading (lost, not supported) says
	// nothing about throttling: no transition is derived from it.
	if cur.ThrottleReasons == nil {
		return events
	}
	after := slowdownMask(cur)
	if started := after &^ before; started != 0 {
		event(nvml.EventThrottleStart, started, describeReasons(started))
	}
	if stopped := before &^ after; stopped != 0 {
		event(nvml.EventThrottleStop, stopped, describeReasons(stopped))
	}
	return events
}

func slowdownMask(s nvml.GPUSample) uint64 {
	if s.ThrottleReasons == nil {
		return 0
	}
	return nvml.SlowdownMask(*s.ThrottleReasons)
}

// describeReasons names the reasons of a mask with what each means:
// "sw_power_cap (power capped: the draw reached the power limit)".
func describeReasons(mask uint64) string {
	var parts []string
	for _, r := range nvml.ThrottleReasons {
		if mask&r.Bit != 0 {
			parts = append(parts, fmt.Sprintf("%s (%s)", r.Name, r.Meaning))
		}
	}
	return strings.Join(parts, ", ")
}

// Describe fills an NVML event's Detail where NVML left it empty: an XID's
// usual meaning, what an ECC event counts.
func Describe(ev nvml.Event) nvml.Event {
	if ev.Detail != "" {
		return ev
	}
	switch ev.Kind {
	case nvml.EventXID:
		ev.Detail = describeXID(ev.XID)
	case nvml.EventECCSingleBit:
		ev.Detail = "corrected (single-bit) ECC error"
	case nvml.EventECCDoubleBit:
		ev.Detail = "uncorrectable (double-bit) ECC error"
	case nvml.EventGPUUnavailable:
		ev.Detail = "the GPU became unavailable"
	}
	return ev
}

// EventLine is an event as one line of text:
// "2026/11/22 08:00:02.000 GPU 4 XID 79: the GPU has fallen off the bus: ...".
func EventLine(ev nvml.Event) string {
	var what string
	switch ev.Kind {
	case nvml.EventXID:
		what = fmt.Sprintf("XID %d", ev.XID)
	case nvml.EventThrottleStart:
		what = "throttling started"
	case nvml.EventThrottleStop:
		what = "throttling stopped"
	case nvml.EventGPULost:
		what = "lost"
	case nvml.EventGPUUnavailable:
		what = "unavailable"
	case nvml.EventECCSingleBit:
		what = "single-bit ECC error"
	case nvml.EventECCDoubleBit:
		what = "double-bit ECC error"
	default:
		what = string(ev.Kind)
	}
	where := fmt.Sprintf("GPU %d", ev.GPUIndex)
	if ev.GPUIndex < 0 {
		where = "a GPU NVML did not identify"
	}
	if ev.GPUInstanceID >= 0 {
		where += fmt.Sprintf(" (MIG GI %d", ev.GPUInstanceID)
		if ev.ComputeInstanceID >= 0 {
			where += fmt.Sprintf(" CI %d", ev.ComputeInstanceID)
		}
		where += ")"
	}
	line := fmt.Sprintf("%s %s %s", Timestamp(ev.Time), where, what)
	if ev.Detail != "" {
		line += ": " + ev.Detail
	}
	return line
}

// Timestamp spells a time as nvidia-smi does: "2026/11/22 08:00:00.123".
func Timestamp(t time.Time) string {
	return t.Format("2006/01/02 15:04:05.000")
}
