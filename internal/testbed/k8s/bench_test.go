package k8s

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// BenchmarkAddNodes registers b.N GPU nodes on a cluster of its own and
// waits until all are Ready: go test -bench AddNodes -benchtime 5000x.
func BenchmarkAddNodes(b *testing.B) {
	testbed.SkipIfUnavailable(b)
	c := New(Options{})
	testbed.StartForTest(b, testbed.Options{Backends: []testbed.Backend{c}})
	specs := make([]NodeSpec, b.N)
	names := make([]string, b.N)
	for i := range specs {
		names[i] = fmt.Sprintf("gpu-p5-bench-%d", i)
		specs[i] = NodeSpec{Name: names[i], InstanceType: mustInstanceType("p5.48xlarge")}
	}
	ctx := context.Background()
	b.ResetTimer()
	started := time.Now()
	if err := c.AddNodes(ctx, specs); err != nil {
		b.Fatal(err)
	}
	created := time.Since(started)
	if err := c.WaitForNodesReady(ctx, names...); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(created.Seconds(), "s-to-create")
	b.ReportMetric(time.Since(started).Seconds(), "s-to-ready")
}
