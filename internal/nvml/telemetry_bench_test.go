package nvml

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// BenchmarkTelemetrySample is one Sample of 8 busy A100s, each with 12
// active NVLinks (four pairs) and two processes, with new utilization
// samples before every Sample (the fleet advances one step, off the
// clock), as on the metrics path. It reports the NVML calls per Sample:
//
//   - "sample": a later Sample, which skips what the GPUs said they do not
//     support and reuses names, bus ids and handles;
//   - "first-sample": the first Sample of a new GPUs;
//   - "snapshot": Snapshot of the same double (inventory and health, with
//     topology but without sysfs), the baseline beside
//     BenchmarkSnapshotDGXA100.
//
// The double counts calls by wrapping every mock func through reflection,
// which adds to ns/op as much for Snapshot as for Sample.
func BenchmarkTelemetrySample(b *testing.B) {
	newFleet := func() *nvmltest.Fleet {
		fleet := nvmltest.NewDGXA100()
		fleet.ProcessNames = map[uint32]string{100: "python3", 101: "python3"}
		for pair := 0; pair < 8; pair += 2 {
			fleet.ConnectNVLink(pair, pair+1, 12)
		}
		for i := range 8 {
			fleet.Script(i, nvmltest.Step{
				UtilizationSamples: []uint32{90, 95, 100, 100, 85, 90}, MemoryUtilization: 40, MemoryUsedMiB: 30000,
				TemperatureC: 65, PowerDrawMW: 320000, SMClockMHz: 1410, MemoryClockMHz: 1215,
				ThrottleReasons: gonvml.ClocksEventReasonSwPowerCap, PCIeTxKBps: 1200, PCIeRxKBps: 5400,
				Processes: []gonvml.ProcessInfo{{Pid: 100, UsedGpuMemory: 20000 * mib}, {Pid: 101, UsedGpuMemory: 10000 * mib}},
			})
		}
		return fleet
	}
	check := func(b *testing.B, s TelemetrySample, err error) {
		if err != nil || len(s.GPUs) != 8 || s.GPUs[7].NVLinkErrors == nil || len(s.GPUs[7].Processes) != 2 {
			b.Fatalf("sample: %v, %d GPUs", err, len(s.GPUs))
		}
	}
	report := func(b *testing.B, fleet *nvmltest.Fleet, before nvmltest.CallCounts) {
		b.ReportMetric(float64(fleet.Calls().Total-before.Total)/float64(b.N), "nvml-calls/op")
	}

	b.Run("sample", func(b *testing.B) {
		fleet := newFleet()
		gpus := New(Options{Lib: fleet.Server, SysfsRoot: b.TempDir(), Now: fleet.Now})
		defer gpus.Close()
		s, err := gpus.Sample(SampleOptions{})
		check(b, s, err)
		before := fleet.Calls()
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			fleet.Advance()
			b.StartTimer()
			if _, err := gpus.Sample(SampleOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		report(b, fleet, before)
	})
	b.Run("first-sample", func(b *testing.B) {
		fleet := newFleet()
		root := b.TempDir()
		before := fleet.Calls()
		b.ReportAllocs()
		for b.Loop() {
			gpus := New(Options{Lib: fleet.Server, SysfsRoot: root, Now: fleet.Now})
			s, err := gpus.Sample(SampleOptions{})
			check(b, s, err)
			b.StopTimer()
			if err := gpus.Close(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		// Init and Shutdown are counted too: two calls per op.
		report(b, fleet, before)
	})
	b.Run("snapshot", func(b *testing.B) {
		fleet := newFleet()
		gpus := New(Options{Lib: fleet.Server, SysfsRoot: b.TempDir(), Now: fleet.Now})
		defer gpus.Close()
		if snap, err := gpus.Snapshot(); err != nil || len(snap.Devices) != 8 {
			b.Fatalf("snapshot: %v", err)
		}
		before := fleet.Calls()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := gpus.Snapshot(); err != nil {
				b.Fatal(err)
			}
		}
		report(b, fleet, before)
	})
}
