package nvml

import "testing"

// BenchmarkSnapshotDGXA100 is one inventory of 8 mocked A100s with every
// field the snapshot reads answered, topology included; the target is at
// most 1 ms per inventory. "with-sysfs" also reads a sysfs tree of the 8
// GPUs from disk, which is most of the cost; "nvml-only" has no sysfs tree.
func BenchmarkSnapshotDGXA100(b *testing.B) {
	for _, bc := range []struct {
		name string
		root func(testing.TB) string
	}{
		{"with-sysfs", dgxSysfs},
		{"nvml-only", func(tb testing.TB) string { return tb.TempDir() }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			gpus := New(Options{Lib: newDGXA100(b), SysfsRoot: bc.root(b)})
			defer gpus.Close()
			if snap, err := gpus.Snapshot(); err != nil || len(snap.Devices) != 8 || len(snap.Topology) != 28 {
				b.Fatalf("snapshot: %v, %d devices, %d links", err, len(snap.Devices), len(snap.Topology))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := gpus.Snapshot(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
