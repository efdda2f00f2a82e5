package telemetry

import (
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// migSample is GPU 0 in MIG mode with one 3g.40gb device holding a
// process, beside a GPU without MIG.
func migSample() nvml.TelemetrySample {
	g := withReasons(a100(0), powerCap)
	g.MIG = []nvml.MIGSample{{
		MIGDevice:     nvml.MIGDevice{Profile: "3g.40gb", GPUInstanceID: 1, ComputeInstanceID: 0, MemoryMiB: 40448},
		MemoryUsedMiB: ptr[uint64](1200),
		Processes:     []nvml.Process{{PID: 1, UsedMemoryMiB: 1100}},
	}}
	return sample(0, g, a100(1))
}

func TestFrameShowsMIGDevicesUnderTheirGPU(t *testing.T) {
	events := []nvml.Event{Describe(nvml.Event{Time: t0, Kind: nvml.EventXID, GPUIndex: 1, XID: 48, GPUInstanceID: -1})}
	frame := Frame(migSample(), events)
	lines := strings.Split(frame, "\n")
	if !strings.HasPrefix(lines[0], "2026/11/26 08:00:00.123  driver 550.54.15 (CUDA 12.4)  2 GPUs") {
		t.Errorf("title: %q", lines[0])
	}
	var header, gpu0, mig, gpu1 string
	for _, line := range lines {
		switch {
		case strings.HasPrefix(line, "GPU "):
			header = line
		case strings.HasPrefix(line, "0 "):
			gpu0 = line
		case strings.Contains(line, "MIG 3g.40gb"):
			mig = line
		case strings.HasPrefix(line, "1 "):
			gpu1 = line
		}
	}
	for _, want := range []string{"UTIL", "MEMORY USED / TOTAL", "TEMP", "POWER / LIMIT", "SM CLOCK", "THROTTLE", "PROCS"} {
		if !strings.Contains(header, want) {
			t.Errorf("header lacks %q: %q", want, header)
		}
	}
	for _, want := range []string{"45 %", "10240 / 81920 MiB", "40 °C", "61 / 400 W", "1410 MHz", "sw_power_cap"} {
		if !strings.Contains(gpu0, want) {
			t.Errorf("GPU 0 row lacks %q: %q", want, gpu0)
		}
	}
	if !strings.Contains(mig, "(GI 1 CI 0)  n/a (MIG)") || !strings.Contains(mig, "1200 / 40448 MiB") || strings.Contains(mig, "0 %") {
		t.Errorf("MIG row must show its memory and n/a (MIG) for utilization, never a zero: %q", mig)
	}
	if strings.Index(frame, mig) < strings.Index(frame, gpu0) || strings.Index(frame, mig) > strings.Index(frame, gpu1) {
		t.Errorf("the MIG device is not under its GPU:\n%s", frame)
	}
	if !strings.Contains(frame, "Recent events:\n  2026/11/26 08:00:00.123 GPU 1 XID 48: double-bit") {
		t.Errorf("frame lacks the recent event:\n%s", frame)
	}
}

func TestLinesAreOnePerGPUWithoutEscapeCodes(t *testing.T) {
	text := Lines(migSample())
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	want := []string{
		"2026/11/26 08:00:00.123 GPU 0 NVIDIA A100-SXM4-80GB: util 45 %, mem util 12 %, memory 10240 / 81920 MiB, temp 40 °C, power 61 / 400 W, sm 1410 MHz, mem clock 1593 MHz, pcie tx/rx n/a, throttle sw_power_cap, procs 2",
		"2026/11/26 08:00:00.123 GPU 0 MIG 3g.40gb (GI 1 CI 0): util n/a (MIG), memory 1200 / 40448 MiB, procs 1",
		"2026/11/26 08:00:00.123 GPU 1 NVIDIA A100-SXM4-80GB: util 45 %, mem util 12 %, memory 10240 / 81920 MiB, temp 40 °C, power 61 / 400 W, sm 1410 MHz, mem clock 1593 MHz, pcie tx/rx n/a, throttle -, procs 1",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if strings.ContainsRune(text, '\x1b') {
		t.Errorf("lines hold escape codes: %q", text)
	}
	lost := nvml.GPUSample{Index: 4, UUID: "GPU-4", Name: "NVIDIA A100-SXM4-80GB", Lost: true}
	if got := Lines(sample(0, lost)); !strings.Contains(got, "GPU 4 NVIDIA A100-SXM4-80GB (LOST: needs a reset or a reboot): util n/a") {
		t.Errorf("a lost GPU's line: %q", got)
	}
}
