package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// These tests script the DGX A100 double over time: each Sample the
// monitor takes reads the next step of every scripted GPU.

// steppingTelemetry advances the double one step before each Sample but
// the first (Script puts a GPU on its first step at once), and calls
// beforeSample with the sample's number (from 1) first.
type steppingTelemetry struct {
	nvml.Telemetry
	fleet        *nvmltest.Fleet
	beforeSample func(n int)
	samples      int
}

func (s *steppingTelemetry) Sample(opts nvml.SampleOptions) (nvml.TelemetrySample, error) {
	s.samples++
	if s.samples > 1 {
		s.fleet.Advance()
	}
	if s.beforeSample != nil {
		s.beforeSample(s.samples)
	}
	return s.Telemetry.Sample(opts)
}

// steppingEnv is testEnv over fleet, advanced once per sample.
func steppingEnv(fleet *nvmltest.Fleet, beforeSample func(n int)) (environment, *bytes.Buffer, *bytes.Buffer) {
	env, stdout, stderr, _ := testEnv(fleet, nil)
	open := env.openTelemetry
	env.openTelemetry = func(sysfsRoot string) nvml.Telemetry {
		return &steppingTelemetry{Telemetry: open(sysfsRoot), fleet: fleet, beforeSample: beforeSample}
	}
	return env, stdout, stderr
}

// busy is a step of an A100 working at 400 W limit-free; tests change what
// their story needs.
func busy() nvmltest.Step {
	return nvmltest.Step{
		UtilizationSamples: []uint32{90, 100}, MemoryUtilization: 40, MemoryUsedMiB: 20480,
		TemperatureC: 60, PowerDrawMW: 300000, SMClockMHz: 1410, MemoryClockMHz: 1215,
		Processes: []gonvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 20000 << 20}},
	}
}

func capped(s nvmltest.Step) nvmltest.Step {
	s.ThrottleReasons = gonvml.ClocksEventReasonSwPowerCap
	s.PowerDrawMW, s.SMClockMHz = 400000, 1200
	return s
}

func TestMonitorSummarizesAScriptedRun(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	for _, gpu := range []int{0, 2, 4, 6, 7} {
		fleet.Script(gpu, busy())
	}
	// GPU 3 is power-capped in samples 2 and 4 of 5.
	fleet.Script(3, busy(), capped(busy()), busy(), capped(busy()), busy())
	// GPU 1 fills its 40 GiB to 98% in sample 3.
	full := busy()
	full.MemoryUsedMiB = 40141
	full.Processes = []gonvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 30000 << 20}, {Pid: 777, UsedGpuMemory: 10000 << 20}}
	fleet.Script(1, busy(), busy(), full, busy())
	// GPU 5 does nothing while a process holds 12 GiB on it.
	idle := nvmltest.Step{UtilizationSamples: []uint32{0, 0}, MemoryUsedMiB: 12800, TemperatureC: 30, PowerDrawMW: 60000,
		SMClockMHz: 210, MemoryClockMHz: 1215, ThrottleReasons: gonvml.ClocksEventReasonGpuIdle,
		Processes: []gonvml.ProcessInfo{{Pid: 99, UsedGpuMemory: 12 << 30}}}
	fleet.Script(5, idle)

	env, stdout, stderr := steppingEnv(fleet, nil)
	env.now = fleet.Now // the double's clock: one second per step
	if code := runIn(env, "monitor", "--count", "5", "--interval", "1ms"); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	out := stdout.String()
	for _, want := range []string{
		"Summary: 5 samples from 2026/01/01 00:00:00.000 to 2026/01/01 00:00:04.000, 8 GPUs",
		"  GPU 3: sw_power_cap 40% (2 of 5)",
		"  GPU 1: 40141 MiB of 40960 MiB at 00:00:02, most held by pid 4242 with 30000 MiB",
		"2026/01/01 00:00:01.000 GPU 3 throttling started: sw_power_cap",
		"2026/01/01 00:00:02.000 GPU 3 throttling stopped: sw_power_cap",
		"  - GPU 1 memory reached 98% of 40 GiB",
		"  - GPU 3 was power-capped 40% of the time",
		"  - GPU 5 idle throughout while processes held 12 GiB on it",
		"GPU 3 throttling started: sw_power_cap (power capped: the draw reached the power limit)",
		"GPU 3 throttling stopped: sw_power_cap",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "GPU 3 throttling started"); n != 2 {
		t.Errorf("GPU 3 started throttling %d times, want 2:\n%s", n, out)
	}
	if strings.Contains(out, "GPU 0 was") || strings.Contains(out, "GPU 5 was") {
		t.Errorf("a finding about a GPU with nothing to say (gpu_idle is no slowdown):\n%s", out)
	}
}

func TestMonitorReportsAnXIDAndALostGPU(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	for gpu := range 8 {
		fleet.Script(gpu, busy())
	}
	// WatchEvents registers after the first sample: the XID is fired at
	// the second, and GPU 4 falls off the bus at the third.
	env, _, stderr := steppingEnv(fleet, func(n int) {
		switch n {
		case 2:
			if fleet.FireXID(4, 79) != 1 {
				t.Errorf("XID 79 reached no event set: the monitor is not watching")
			}
		case 3:
			fleet.GPUs[4].Lost = true
		}
	})
	var stdout syncBuffer
	env.stdout = &stdout
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	done := make(chan int)
	go func() { done <- run(ctx, []string{"monitor", "--interval", "1ms"}, env) }()
	// The XID comes through NVML's event set on its own goroutine: wait
	// for its line and for the loss, then interrupt, as Ctrl-C would.
	for !strings.Contains(stdout.String(), "GPU 4 XID 79") || !strings.Contains(stdout.String(), "GPU 4 lost") {
		select {
		case code := <-done:
			t.Fatalf("monitor ended (exit %d) before the XID and the loss were reported:\n%s\n%s", code, stdout.String(), stderr)
		default:
		}
		time.Sleep(time.Millisecond) // poll, not spin; no deadline of its own
	}
	interrupt()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d after an interrupt\n%s", code, stderr)
	}
	out := stdout.String()
	for _, want := range []string{
		"2026/11/22 08:00:00.000 GPU 4 XID 79: the GPU has fallen off the bus: it no longer answers over PCIe",
		"GPU 4 lost: the GPU fell off the bus (NVML: GPU is lost); it needs a reset or a reboot",
		"(LOST: needs a reset or a reboot)",
		"  - GPU 4 was lost at 08:00:00: it fell off the bus and needs a reset or a reboot",
		"  - GPU 4 reported XID 79: the GPU has fallen off the bus",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
