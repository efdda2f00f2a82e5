package healthagent_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/healthagent"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// The benchmarks of bench/health-agent.sh. Each runs once (-benchtime 1x)
// for a fixed real duration and reports its figures with ReportMetric;
// bench/README.md keeps them. No test asserts a timing.

// processCPU is the CPU time (user + system) this process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAgentNVMLCallsAndCPUPerMinute runs the agent with its default
// settings (a sample every 5 s) on the 8-GPU double for a window of real
// time, and reports its NVML calls and CPU per minute. Baselines, in the
// same process: the process' CPU over an equal window without the agent
// (the testbed's in-process parts), and the NVML calls of one bare Sample
// pass (what `gpu-bootstrap monitor` pays per reading).
func BenchmarkAgentNVMLCallsAndCPUPerMinute(b *testing.B) {
	window := 30 * time.Second
	node := benchNode(b)

	idleStart := processCPU(b)
	time.Sleep(window)
	idleCPU := processCPU(b) - idleStart

	bare := nvmltest.NewDGXA100()
	tel := nvml.New(nvml.Options{Lib: bare.Server, SysfsRoot: b.TempDir()})
	if _, err := tel.Sample(nvml.SampleOptions{}); err != nil { // the first pass asks what each GPU supports
		b.Fatal(err)
	}
	before := bare.Calls().Total
	if _, err := tel.Sample(nvml.SampleOptions{}); err != nil {
		b.Fatal(err)
	}
	perSample := bare.Calls().Total - before
	_ = tel.Close()

	fleet := nvmltest.NewDGXA100()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	agentTel := nvml.New(nvml.Options{Lib: fleet.Server, SysfsRoot: b.TempDir()})
	go func() {
		defer close(done)
		_ = healthagent.Run(ctx, healthagent.Options{NodeName: node, Client: cluster.Client(), Telemetry: agentTel, Settings: gpuhealth.DefaultSettings()})
	}()
	time.Sleep(2 * time.Second) // past the start: the first sample, the watch, the first write
	callsStart, cpuStart := fleet.Calls(), processCPU(b)
	time.Sleep(window)
	callsEnd, cpuEnd := fleet.Calls(), processCPU(b)
	cancel()
	<-done
	_ = agentTel.Close()

	perMinute := float64(time.Minute) / float64(window)
	calls := float64(callsEnd.Total-callsStart.Total) * perMinute
	waits := float64(callsEnd.ByMethod["EventSet.Wait"]-callsStart.ByMethod["EventSet.Wait"]) * perMinute
	agentCPU := (cpuEnd - cpuStart - idleCPU).Seconds() * perMinute
	b.ReportMetric(calls, "nvml-calls/min")
	b.ReportMetric(waits, "event-waits/min")
	b.ReportMetric(float64(perSample), "nvml-calls/bare-sample")
	b.ReportMetric(calls/float64(perSample), "bare-samples-equivalent/min")
	b.ReportMetric(agentCPU, "cpu-s/min")
	b.ReportMetric(idleCPU.Seconds()*perMinute, "idle-baseline-cpu-s/min")
	b.ReportMetric(agentCPU/60*100, "%-of-a-core")
}

// BenchmarkAgentXIDToCondition fires 50 XIDs, one at a time, on the 8-GPU
// double and times each from Fleet.FireXID to the condition carrying it on
// the API server, seen through a watch of the node (as the scheduler's and
// repair's informers see it). The events are a damping interval apart, so
// each is the first change after a quiet interval, published at once.
func BenchmarkAgentXIDToCondition(b *testing.B) {
	const events = 50
	node := benchNode(b)
	fleet := nvmltest.NewDGXA100()
	settings := gpuhealth.DefaultSettings()
	settings.Damping = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tel := nvml.New(nvml.Options{Lib: fleet.Server, SysfsRoot: b.TempDir()})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = healthagent.Run(ctx, healthagent.Options{NodeName: node, Client: cluster.Client(), Telemetry: tel, Settings: settings})
	}()
	defer func() { cancel(); <-done; _ = tel.Close() }()

	w, err := cluster.Client().CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + node})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	// waitFor waits for the node's condition message to satisfy ok.
	waitFor := func(ok func(c *corev1.NodeCondition) bool) {
		timeout := time.After(30 * time.Second)
		for {
			select {
			case e := <-w.ResultChan():
				if e.Type != watch.Modified && e.Type != watch.Added {
					continue
				}
				n, isNode := e.Object.(*corev1.Node)
				if !isNode {
					continue
				}
				for _, c := range n.Status.Conditions {
					if c.Type == gpuhealth.ConditionType && ok(&c) {
						return
					}
				}
			case <-timeout:
				b.Fatal("the condition never showed the XID")
			}
		}
	}
	waitFor(func(c *corev1.NodeCondition) bool { return c.Status == corev1.ConditionTrue })
	for fleet.FireXID(0, 0) == 0 { // XID 0: not critical; waits until the agent watches events
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * settings.SampleInterval) // XID 0's growth window passes

	var latencies []time.Duration
	for i := 1; i <= events; i++ {
		want := "XID 79 on GPU 0 "
		if i > 1 {
			want = fmt.Sprintf("(%d times)", i)
		}
		time.Sleep(settings.Damping + 50*time.Millisecond)
		start := time.Now()
		fleet.FireXID(0, 79)
		waitFor(func(c *corev1.NodeCondition) bool {
			return c.Status == corev1.ConditionFalse && strings.Contains(c.Message, want)
		})
		latencies = append(latencies, time.Since(start))
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(latencies[len(latencies)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(latencies[0].Microseconds())/1000, "min-ms")
}

// benchNode creates a node for a benchmark.
func benchNode(b *testing.B) string {
	b.Helper()
	name := fmt.Sprintf("gpu-health-bench-%d", nodeCounter.Add(1))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{healthagent.LabelGPUCount: "8"}}}
	if _, err := cluster.Client().CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cluster.Client().CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}
