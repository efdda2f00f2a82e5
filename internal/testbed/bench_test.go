package testbed

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkAddNodes registers b.N GPU nodes on a testbed of its own and
// waits until all are Ready: go test -bench AddNodes -benchtime 5000x.
func BenchmarkAddNodes(b *testing.B) {
	SkipIfUnavailable(b)
	tb := StartForTest(b, Options{})
	specs := make([]NodeSpec, b.N)
	names := make([]string, b.N)
	for i := range specs {
		names[i] = fmt.Sprintf("gpu-p5-bench-%d", i)
		specs[i] = NodeSpec{Name: names[i], Profile: mustProfile("p5.48xlarge")}
	}
	ctx := context.Background()
	b.ResetTimer()
	started := time.Now()
	if err := tb.AddNodes(ctx, specs); err != nil {
		b.Fatal(err)
	}
	created := time.Since(started)
	if err := tb.WaitForNodesReady(ctx, names...); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(created.Seconds(), "s-to-create")
	b.ReportMetric(time.Since(started).Seconds(), "s-to-ready")
}
