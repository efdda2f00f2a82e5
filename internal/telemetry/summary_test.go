package telemetry

import (
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// series is five samples of eight GPUs, each GPU with one story:
//
//	0: busy, memory peaks at sample 2 held mostly by python
//	1: memory reaches 98% of 80 GiB at sample 3
//	2: thermal slowdown in sample 2 at 87 °C
//	3: power-capped in samples 1 and 3 (2 of 5)
//	4: XID 79 at sample 2, lost from sample 3
//	5: idle throughout while a process holds 12 GiB
//	6: two new uncorrectable ECC errors
//	7: nothing to say
func series(r *Recorder) {
	for i := range 5 {
		var gpus []nvml.GPUSample
		for index := range 8 {
			g := a100(index)
			switch index {
			case 0:
				g.UtilizationGPU = ptr(uint32(10 * (i + 1)))
				g.MemoryUsedMiB = ptr([]uint64{10240, 20480, 30720, 20480, 10240}[i])
				g.TemperatureC = ptr(uint32(40 + i))
				g.PowerDrawW = ptr([]float64{100, 200, 300, 200, 100}[i])
				if i == 2 {
					g.Processes = []nvml.Process{{PID: 7, Name: "nccl-proxy", UsedMemoryMiB: 2000}, {PID: 4242, Name: "python", UsedMemoryMiB: 28000}}
				}
			case 1:
				if i == 3 {
					g.MemoryUsedMiB = ptr[uint64](80282)
				}
			case 2:
				if i == 2 {
					g = withReasons(g, swThermal)
					g.TemperatureC = ptr[uint32](87)
				}
			case 3:
				if i == 1 || i == 3 {
					g = withReasons(g, powerCap)
				}
			case 4:
				if i >= 3 {
					g = nvml.GPUSample{Index: 4, UUID: g.UUID, Name: g.Name, Lost: true, Error: "reading UUID: ERROR_GPU_IS_LOST"}
				}
			case 5:
				g.UtilizationGPU = ptr[uint32](0)
				g.Processes = []nvml.Process{{PID: 99, Name: "jupyter", UsedMemoryMiB: 12288}}
			case 6:
				g.ECC.UncorrectedVolatile = ptr([]uint64{0, 0, 1, 2, 2}[i])
			}
			gpus = append(gpus, g)
		}
		s := sample(i, gpus...)
		r.AddSample(s)
		if i == 2 {
			r.AddEvent(nvml.Event{Time: s.Time, Kind: nvml.EventXID, GPUIndex: 4, UUID: gpus[4].UUID, XID: 79, GPUInstanceID: -1, ComputeInstanceID: -1})
		}
	}
}

func TestSummaryNumbers(t *testing.T) {
	r := NewRecorder()
	series(r)
	s := r.Summary()
	if s.Samples != 5 || !s.Start.Equal(t0) || !s.End.Equal(t0.Add(4e9)) || len(s.GPUs) != 8 {
		t.Fatalf("summary: %d samples from %v to %v, %d GPUs", s.Samples, s.Start, s.End, len(s.GPUs))
	}
	g0 := s.GPUs[0]
	for name, got := range map[string]*Stat{"utilization": g0.UtilizationGPU, "memory used": g0.MemoryUsedMiB, "temperature": g0.TemperatureC, "power": g0.PowerDrawW, "SM clock": g0.SMClockMHz} {
		want := map[string]Stat{
			"utilization": {10, 30, 50}, "memory used": {10240, 18432, 30720}, "temperature": {40, 42, 44},
			"power": {100, 180, 300}, "SM clock": {1410, 1410, 1410},
		}[name]
		if got == nil || *got != want {
			t.Errorf("GPU 0 %s = %+v, want %+v", name, got, want)
		}
	}
	if p := g0.PeakMemory; p == nil || p.UsedMiB != 30720 || !p.Time.Equal(t0.Add(2e9)) || p.Process == nil || p.Process.PID != 4242 || p.Process.UsedMemoryMiB != 28000 {
		t.Errorf("GPU 0 peak memory = %+v (process %+v), want 30720 MiB at sample 2 held mostly by pid 4242", p, p.Process)
	}
	if got := s.GPUs[3].Throttle; len(got) != 1 || got[0] != (ThrottleShare{Reason: "sw_power_cap", Meaning: "power capped: the draw reached the power limit", Samples: 2, Percent: 40}) {
		t.Errorf("GPU 3 throttling = %+v, want sw_power_cap in 2 of 5 samples (40%%)", got)
	}
	if len(s.GPUs[7].Throttle) != 0 || s.GPUs[7].Throttle == nil {
		t.Errorf("GPU 7 throttling = %#v, want an empty list", s.GPUs[7].Throttle)
	}
	if g4 := s.GPUs[4]; g4.LostAt == nil || !g4.LostAt.Equal(t0.Add(3e9)) || g4.XIDs[79] != 1 || g4.UtilizationGPU.Max != 45 {
		t.Errorf("GPU 4: lost at %v, XIDs %v, utilization %+v", g4.LostAt, g4.XIDs, g4.UtilizationGPU)
	}
	if s.GPUs[6].NewUncorrectableECC != 2 || s.GPUs[5].ProcessMemoryMaxMiB != 12288 {
		t.Errorf("GPU 6 new ECC %d, GPU 5 process memory %d", s.GPUs[6].NewUncorrectableECC, s.GPUs[5].ProcessMemoryMaxMiB)
	}
	wantCounts := map[nvml.EventKind]int{nvml.EventXID: 1, nvml.EventGPULost: 1, nvml.EventThrottleStart: 3, nvml.EventThrottleStop: 3}
	for kind, n := range wantCounts {
		if s.EventCounts[kind] != n {
			t.Errorf("%s events: %d, want %d (all: %v)", kind, s.EventCounts[kind], n, s.EventCounts)
		}
	}
	if len(s.Events) != 2 || s.Events[0].Kind != nvml.EventXID || s.Events[1].Kind != nvml.EventGPULost {
		t.Errorf("events kept for the summary: %+v, want the XID then the loss", s.Events)
	}
}

func TestSummaryFindings(t *testing.T) {
	r := NewRecorder()
	series(r)
	want := []string{
		"GPU 1 memory reached 98% of 80 GiB",
		"GPU 2 was slowed down for heat (software thermal slowdown) 20% of the time",
		"GPU 2 reached 87 °C",
		"GPU 3 was power-capped 40% of the time",
		"GPU 4 was lost at 08:00:03: it fell off the bus and needs a reset or a reboot",
		"GPU 4 reported XID 79: the GPU has fallen off the bus: it no longer answers over PCIe; a reset or a reboot is needed, check power and seating if it repeats",
		"GPU 5 idle throughout while processes held 12 GiB on it",
		"GPU 6 counted 2 new uncorrectable ECC errors",
	}
	got := r.Summary().Findings
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\n\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestFindingThresholds(t *testing.T) {
	tests := []struct {
		description string
		gpu         GPUSummary
		want        string // "" for no finding
	}{
		{"power-capped below 10% of the time is routine",
			GPUSummary{Index: 3, Samples: 20, Throttle: []ThrottleShare{{Reason: "sw_power_cap", Samples: 1, Percent: 5}}}, ""},
		{"power-capped 10% of the time is worth a word",
			GPUSummary{Index: 3, Samples: 10, Throttle: []ThrottleShare{{Reason: "sw_power_cap", Samples: 1, Percent: 10}}}, "GPU 3 was power-capped 10% of the time"},
		{"any hardware thermal slowdown is worth a word",
			GPUSummary{Index: 1, Samples: 1000, Throttle: []ThrottleShare{{Reason: "hw_thermal_slowdown", Samples: 1, Percent: 0.1}}},
			"GPU 1 was slowed down for heat by the hardware (hardware thermal slowdown) <1% of the time"},
		{"memory at 94% is not full",
			GPUSummary{Index: 1, Samples: 1, PeakMemory: &PeakMemory{UsedMiB: 77005, TotalMiB: ptr[uint64](81920)}}, ""},
		{"memory at 95% is nearly full",
			GPUSummary{Index: 1, Samples: 1, PeakMemory: &PeakMemory{UsedMiB: 77824, TotalMiB: ptr[uint64](81920)}}, "GPU 1 memory reached 95% of 80 GiB"},
		{"idle with under 1 GiB held is just idle",
			GPUSummary{Index: 5, Samples: 5, UtilizationGPU: &Stat{Max: 0}, ProcessMemoryMaxMiB: 1000}, ""},
		{"one idle sample is not throughout",
			GPUSummary{Index: 5, Samples: 1, UtilizationGPU: &Stat{Max: 0}, ProcessMemoryMaxMiB: 4096}, ""},
		{"5% utilization is still idle",
			GPUSummary{Index: 5, Samples: 2, UtilizationGPU: &Stat{Max: 5}, ProcessMemoryMaxMiB: 1536}, "GPU 5 idle throughout while processes held 1.5 GiB on it"},
		{"6% utilization is working",
			GPUSummary{Index: 5, Samples: 2, UtilizationGPU: &Stat{Max: 6}, ProcessMemoryMaxMiB: 4096}, ""},
		{"84 °C is warm, not hot",
			GPUSummary{Index: 2, Samples: 1, TemperatureC: &Stat{Max: 84}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			got := strings.Join(findings(Summary{GPUs: []GPUSummary{tt.gpu}}), "\n")
			if got != tt.want {
				t.Errorf("findings = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSummaryText(t *testing.T) {
	r := NewRecorder()
	series(r)
	text := r.Summary().Text()
	for _, want := range []string{
		"Summary: 5 samples from 2026/11/26 08:00:00.123 to 2026/11/26 08:00:04.123, 8 GPUs",
		"0    NVIDIA A100-SXM4-80GB  10/30.0/50",
		"  GPU 3: sw_power_cap 40% (2 of 5)",
		"  GPU 0: 30720 MiB of 81920 MiB at 08:00:02, most held by pid 4242 (python) with 28000 MiB",
		"Events: gpu_lost 1, throttle_start 3, throttle_stop 3, xid 1",
		"  2026/11/26 08:00:02.123 GPU 4 XID 79: the GPU has fallen off the bus",
		"  - GPU 3 was power-capped 40% of the time",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	empty := NewRecorder().Summary().Text()
	for _, want := range []string{"Summary: 0 samples, 0 GPUs", "Throttling (share of samples): none", "Events: none", "Findings: none"} {
		if !strings.Contains(empty, want) {
			t.Errorf("empty summary lacks %q:\n%s", want, empty)
		}
	}
}

func TestAnEventNVMLCouldNotPlaceIsKeptWithoutAGPU(t *testing.T) {
	r := NewRecorder()
	r.AddSample(sample(0, a100(0)))
	ev := r.AddEvent(nvml.Event{Time: t0, Kind: nvml.EventXID, GPUIndex: -1, XID: 999, GPUInstanceID: -1, ComputeInstanceID: -1})
	if got := EventLine(ev); got != "2026/11/26 08:00:00.123 a GPU NVML did not identify XID 999: an XID NVML could not identify; the kernel log (dmesg, journalctl -k) has its number" {
		t.Errorf("event line %q", got)
	}
	s := r.Summary()
	if len(s.GPUs) != 1 || len(s.Events) != 1 || s.EventCounts[nvml.EventXID] != 1 {
		t.Errorf("summary: %d GPUs, events %+v, counts %v; want GPU 0 alone and the event kept", len(s.GPUs), s.Events, s.EventCounts)
	}
	if want := "a GPU NVML did not identify reported XID 999: an XID NVML could not identify; the kernel log (dmesg, journalctl -k) has its number"; strings.Join(s.Findings, "\n") != want {
		t.Errorf("findings %q, want %q", s.Findings, want)
	}
}
