package telemetry

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

const (
	powerCap   = 0x4  // sw_power_cap
	gpuIdle    = 0x1  // gpu_idle: not a slowdown
	swThermal  = 0x20 // sw_thermal_slowdown
	hwSlowdown = 0x8  // hw_slowdown
)

func withReasons(g nvml.GPUSample, mask uint64) nvml.GPUSample {
	g.ThrottleReasons = &mask
	return g
}

func TestDeriveEvents(t *testing.T) {
	lost := a100(0)
	lost.Lost, lost.Error = true, "reading UUID: ERROR_GPU_IS_LOST"
	lost.ThrottleReasons = nil
	tests := []struct {
		description string
		prev        *nvml.GPUSample
		cur         nvml.GPUSample
		want        []string // kind: detail
	}{
		{"an unthrottled first sample says nothing", nil, a100(0), nil},
		{"a slowdown active in the first sample is reported as started", nil, withReasons(a100(0), powerCap),
			[]string{"throttle_start: sw_power_cap (power capped: the draw reached the power limit)"}},
		{"gpu_idle is not a slowdown", ptr(a100(0)), withReasons(a100(0), gpuIdle), nil},
		{"a power cap starting", ptr(a100(0)), withReasons(a100(0), powerCap|gpuIdle),
			[]string{"throttle_start: sw_power_cap (power capped: the draw reached the power limit)"}},
		{"one reason stops while another starts", ptr(withReasons(a100(0), powerCap)), withReasons(a100(0), swThermal|hwSlowdown),
			[]string{
				"throttle_start: hw_slowdown (hardware slowdown (temperature, power brake or a power supply fault)), sw_thermal_slowdown (software thermal slowdown: GPU or memory temperature above its limit)",
				"throttle_stop: sw_power_cap (power capped: the draw reached the power limit)",
			}},
		{"the same reasons again say nothing", ptr(withReasons(a100(0), powerCap)), withReasons(a100(0), powerCap), nil},
		{"a lost GPU without a reasons reading derives no throttle change", ptr(withReasons(a100(0), powerCap)), lost,
			[]string{"gpu_lost: the GPU fell off the bus (NVML: GPU is lost); it needs a reset or a reboot (reading UUID: ERROR_GPU_IS_LOST)"}},
		{"a GPU still lost is not lost again", &lost, lost, nil},
	}
	at := t0.Add(time.Second)
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			events := deriveEvents(tt.prev, tt.cur, at)
			var got []string
			for _, ev := range events {
				got = append(got, string(ev.Kind)+": "+ev.Detail)
				if ev.Time != at || ev.GPUIndex != 0 || ev.UUID != tt.cur.UUID || ev.GPUInstanceID != -1 {
					t.Errorf("event %+v: time, GPU or MIG instance wrong", ev)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestEventLine(t *testing.T) {
	tests := []struct {
		description string
		event       nvml.Event
		want        string
	}{
		{"an XID from NVML gets its meaning",
			Describe(nvml.Event{Time: t0, Kind: nvml.EventXID, GPUIndex: 4, XID: 79, GPUInstanceID: -1, ComputeInstanceID: -1}),
			"2026/11/26 08:00:00.123 GPU 4 XID 79: the GPU has fallen off the bus: it no longer answers over PCIe; a reset or a reboot is needed, check power and seating if it repeats"},
		{"an XID on a MIG instance names it",
			Describe(nvml.Event{Time: t0, Kind: nvml.EventXID, GPUIndex: 0, XID: 94, GPUInstanceID: 1, ComputeInstanceID: 0}),
			"2026/11/26 08:00:00.123 GPU 0 (MIG GI 1 CI 0) XID 94: contained uncorrectable ECC error: only the application that used the memory was affected; restart it"},
		{"a detail NVML gave is kept",
			Describe(nvml.Event{Time: t0, Kind: nvml.EventXID, GPUIndex: 1, XID: 13, Detail: "from the driver", GPUInstanceID: -1}),
			"2026/11/26 08:00:00.123 GPU 1 XID 13: from the driver"},
		{"a double-bit ECC event",
			Describe(nvml.Event{Time: t0, Kind: nvml.EventECCDoubleBit, GPUIndex: 2, GPUInstanceID: -1}),
			"2026/11/26 08:00:00.123 GPU 2 double-bit ECC error: uncorrectable (double-bit) ECC error"},
		{"throttling started",
			nvml.Event{Time: t0, Kind: nvml.EventThrottleStart, GPUIndex: 3, Detail: "sw_power_cap (power capped)", GPUInstanceID: -1},
			"2026/11/26 08:00:00.123 GPU 3 throttling started: sw_power_cap (power capped)"},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			if got := EventLine(tt.event); got != tt.want {
				t.Errorf("EventLine:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
