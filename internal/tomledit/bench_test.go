package tomledit

import (
	"fmt"
	"strings"
	"testing"
)

// containerdTables is a containerd config with n runtimes besides runc, each
// a table and an options sub-table.
func containerdTables(n int) []byte {
	var b strings.Builder
	b.WriteString("version = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  default_runtime_name = \"runc\"\n\n" +
		"[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n" +
		"  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n    SystemdCgroup = true\n")
	for i := range n {
		fmt.Fprintf(&b, "\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.r%d]\n  runtime_type = \"io.containerd.runc.v2\"\n"+
			"  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.r%d.options]\n    BinaryName = \"/usr/bin/r%d\"\n", i, i, i)
	}
	return []byte(b.String())
}

// BenchmarkTables parses a containerd config with 5,000 and 40,000 runtimes
// and makes the edits gpu-bootstrap makes (copy runc's settings to a new
// nvidia runtime, make it the default, enable CDI). It reports ns per runtime
// table: equal at both sizes when the work is linear (issue 8 measured 4.3×
// more per table at 40k than at 5k before the seen-tracker index).
// bench/tomlscale.sh runs the same through the gpu-bootstrap binary.
//
//	go test -run '^$' -bench BenchmarkTables ./internal/tomledit/
func BenchmarkTables(b *testing.B) {
	cri := []string{"plugins", "io.containerd.grpc.v1.cri"}
	rt := append(append([]string{}, cri...), "containerd", "runtimes")
	for _, n := range []int{5000, 40000} {
		src := containerdTables(n)
		b.Run(fmt.Sprintf("runtimes=%d", n), func(b *testing.B) {
			for b.Loop() {
				d, err := Parse(src)
				if err != nil {
					b.Fatal(err)
				}
				for _, l := range d.Leaves(append(rt, "runc")...) {
					if _, err := d.SetRaw(append(append(append([]string{}, rt...), "nvidia"), l.Path...), l.Raw); err != nil {
						b.Fatal(err)
					}
				}
				for _, edit := range []struct {
					path  []string
					value any
				}{
					{append(append([]string{}, rt...), "nvidia", "options", "BinaryName"), "/usr/bin/nvidia-container-runtime"},
					{append(append([]string{}, cri...), "containerd", "default_runtime_name"), "nvidia"},
					{append(append([]string{}, cri...), "enable_cdi"), true},
				} {
					if _, err := d.Set(edit.path, edit.value); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/table")
		})
	}
}
