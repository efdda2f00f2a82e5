package dcgm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// BenchmarkExpositionRender is the cost of writing one pass of eight GPUs
// with every reading, without NVML.
func BenchmarkExpositionRender(b *testing.B) {
	gpus := make([]nvml.GPUSample, 8)
	for i := range gpus {
		gpus[i] = fullGPU(i)
	}
	p := Pass{Sample: sampleOf(gpus...), Hostname: "dgx-1", XIDs: map[string]uint64{gpus[3].UUID: 48}}
	buf := Append(nil, p)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for range b.N {
		buf = Append(buf[:0], p)
	}
}

// BenchmarkScrape10Scrapers is the latency of GET /metrics over HTTP with
// ten scrapers at once against the eight-GPU NVML double: with --max-age 0
// (an NVML pass per scrape, shared by the scrapers that arrive while it
// runs) and with the default 1 s. It reports the median and 99th
// percentile latency and how many NVML passes the scrapes cost.
func BenchmarkScrape10Scrapers(b *testing.B) {
	for _, maxAge := range []time.Duration{0, time.Second} {
		b.Run("max-age="+maxAge.String(), func(b *testing.B) {
			fleet := nvmltest.NewDGXA100()
			tel := &countingTelemetry{Telemetry: nvml.New(nvml.Options{Lib: fleet.Server, SysfsRoot: b.TempDir()})}
			defer tel.Close()
			exp := New(tel, Options{MaxAge: maxAge, Hostname: "dgx-1"})
			if _, err := exp.Scrape(context.Background()); err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(exp.Handler())
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 10}}
			tel.samples.Store(0)

			const scrapers = 10
			latencies := make([][]time.Duration, scrapers)
			var wg sync.WaitGroup
			b.ResetTimer()
			for s := range scrapers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := s; i < b.N; i += scrapers {
						start := time.Now()
						resp, err := client.Get(srv.URL + "/metrics")
						if err != nil {
							b.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						latencies[s] = append(latencies[s], time.Since(start))
					}
				}()
			}
			wg.Wait()
			b.StopTimer()

			all := slices.Concat(latencies...)
			slices.Sort(all)
			if len(all) == 0 {
				return
			}
			b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(tel.samples.Load())/float64(len(all)), "passes/scrape")
		})
	}
}
