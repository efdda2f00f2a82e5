package dcgm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/podresources"
)

// fakeTelemetry answers Sample with a fixed sample (or error) and
// WatchEvents with a channel the test feeds.
type fakeTelemetry struct {
	sample nvml.TelemetrySample
	err    error
	events chan nvml.Event
}

func (f *fakeTelemetry) Sample(nvml.SampleOptions) (nvml.TelemetrySample, error) {
	return f.sample, f.err
}

func (f *fakeTelemetry) WatchEvents(ctx context.Context) (<-chan nvml.Event, error) {
	if f.events == nil {
		return nil, errors.New("no event set")
	}
	out := make(chan nvml.Event)
	go func() {
		defer close(out)
		for {
			select {
			case ev := <-f.events:
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func (f *fakeTelemetry) Close() error { return nil }

// countingTelemetry counts Sample calls through to another Telemetry and,
// with gate set, holds each Sample until the gate closes.
type countingTelemetry struct {
	nvml.Telemetry
	samples    atomic.Int32
	concurrent atomic.Int32
	maxSeen    atomic.Int32
	gate       chan struct{}
}

func (c *countingTelemetry) Sample(opts nvml.SampleOptions) (nvml.TelemetrySample, error) {
	c.samples.Add(1)
	n := c.concurrent.Add(1)
	defer c.concurrent.Add(-1)
	for {
		seen := c.maxSeen.Load()
		if n <= seen || c.maxSeen.CompareAndSwap(seen, n) {
			break
		}
	}
	if c.gate != nil {
		<-c.gate
	}
	return c.Telemetry.Sample(opts)
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

func newClock() *fakeClock { return &fakeClock{now: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)} }

func TestConcurrentScrapesShareOneNVMLPass(t *testing.T) {
	const scrapers = 10
	tel := &countingTelemetry{Telemetry: &fakeTelemetry{sample: sampleOf(fullGPU(0))}, gate: make(chan struct{})}
	// MaxAge 0: only sharing the pass in flight can keep this to one Sample.
	exp := New(tel, Options{MaxAge: 0})

	results := make([]*Scrape, scrapers)
	var wg sync.WaitGroup
	for i := range scrapers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := exp.Scrape(context.Background())
			if err != nil {
				t.Error(err)
			}
			results[i] = s
		}()
	}
	// Hold the pass until every scraper waits on it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		exp.mu.Lock()
		waiting := exp.waiting
		exp.mu.Unlock()
		if waiting == scrapers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d scrapers waiting after 10 s", waiting, scrapers)
		}
		time.Sleep(time.Millisecond)
	}
	close(tel.gate)
	wg.Wait()

	if n := tel.samples.Load(); n != 1 {
		t.Errorf("%d concurrent scrapes ran %d Samples, want 1", scrapers, n)
	}
	for i, s := range results {
		if s != results[0] {
			t.Errorf("scraper %d got another pass than scraper 0", i)
		}
	}
}

func TestScrapesNeverRunNVMLAtOnce(t *testing.T) {
	tel := &countingTelemetry{Telemetry: &fakeTelemetry{sample: sampleOf(fullGPU(0), fullGPU(1))}}
	exp := New(tel, Options{MaxAge: 0})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if _, err := exp.Scrape(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := tel.maxSeen.Load(); n != 1 {
		t.Errorf("%d Samples ran at once, want 1", n)
	}
}

func TestScrapeWithinMaxAgeReusesThePass(t *testing.T) {
	clock := newClock()
	tel := &countingTelemetry{Telemetry: &fakeTelemetry{sample: sampleOf(fullGPU(0))}}
	exp := New(tel, Options{MaxAge: time.Second, Now: clock.Now})
	ctx := context.Background()

	first, err := exp.Scrape(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(999 * time.Millisecond)
	again, err := exp.Scrape(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again != first || tel.samples.Load() != 1 {
		t.Errorf("a scrape 999 ms after a pass with max age 1 s ran %d Samples, want 1", tel.samples.Load())
	}
	clock.Advance(time.Millisecond)
	fresh, err := exp.Scrape(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fresh == first || tel.samples.Load() != 2 {
		t.Errorf("a scrape at max age reused the pass (%d Samples)", tel.samples.Load())
	}
	if !fresh.At.Equal(clock.Now()) {
		t.Errorf("pass time %v, want %v", fresh.At, clock.Now())
	}
}

func TestFailedPassesAreNotKept(t *testing.T) {
	fake := &fakeTelemetry{err: errors.New("NVML: unknown error")}
	tel := &countingTelemetry{Telemetry: fake}
	exp := New(tel, Options{MaxAge: time.Hour})
	if _, err := exp.Scrape(context.Background()); err == nil || !strings.Contains(err.Error(), "sampling the GPUs") {
		t.Fatalf("Scrape() error = %v", err)
	}
	fake.err, fake.sample = nil, sampleOf(fullGPU(0))
	if _, err := exp.Scrape(context.Background()); err != nil {
		t.Fatalf("the scrape after a failed one: %v", err)
	}
	if n := tel.samples.Load(); n != 2 {
		t.Errorf("%d Samples, want 2: a failure must not be served for max age", n)
	}
}

func TestNoDriver(t *testing.T) {
	exp := New(&fakeTelemetry{sample: nvml.TelemetrySample{Driver: nvml.Driver{Reason: "no NVIDIA driver loaded (libnvidia-ml.so.1 not found)"}}}, Options{})
	_, err := exp.Scrape(context.Background())
	var noDriver *NoDriverError
	if !errors.As(err, &noDriver) || !strings.Contains(err.Error(), "no NVIDIA driver loaded") {
		t.Fatalf("Scrape() error = %v, want a NoDriverError", err)
	}
	rec := httptest.NewRecorder()
	exp.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "no NVIDIA driver loaded") {
		t.Errorf("GET /metrics without a driver: %d %q", rec.Code, rec.Body.String())
	}
}

func TestHandler(t *testing.T) {
	clock := newClock()
	exp := New(&fakeTelemetry{sample: sampleOf(fullGPU(0))}, Options{MaxAge: 5 * time.Second, Now: clock.Now})
	h := exp.Handler()
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}

	rec := get("/metrics")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("GET /metrics: %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if !strings.Contains(rec.Body.String(), `DCGM_FI_DEV_GPU_TEMP{gpu="0",`) || rec.Header().Get(AgeHeader) != "0.000" {
		t.Errorf("GET /metrics: age %q, body:\n%s", rec.Header().Get(AgeHeader), rec.Body.String())
	}
	clock.Advance(1500 * time.Millisecond)
	if age := get("/metrics").Header().Get(AgeHeader); age != "1.500" {
		t.Errorf("%s = %q 1.5 s after the pass, want 1.500", AgeHeader, age)
	}
	if rec := get("/healthz"); rec.Code != http.StatusOK || rec.Body.String() != "ok\n" {
		t.Errorf("GET /healthz: %d %q", rec.Code, rec.Body.String())
	}
	for _, path := range []string{"/", "/metric", "/metrics/extra", "/debug/pprof/"} {
		if rec := get(path); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, rec.Code)
		}
	}
}

type failingHolders struct{ err error }

func (f *failingHolders) Devices(context.Context) (map[string]podresources.Container, error) {
	return nil, f.err
}

func TestPodLabelFailureCostsTheLabelsNotTheScrape(t *testing.T) {
	var log bytes.Buffer
	holders := &failingHolders{err: errors.New("kubelet: connection refused")}
	exp := New(&fakeTelemetry{sample: sampleOf(fullGPU(0))}, Options{Holders: holders, Log: &log})
	for range 3 {
		s, err := exp.Scrape(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(s.Body), "DCGM_FI_DEV_GPU_TEMP") || strings.Contains(string(s.Body), "pod=") {
			t.Fatalf("scrape without pod labels:\n%s", s.Body)
		}
	}
	if got := strings.Count(log.String(), "pod labels unavailable: kubelet: connection refused"); got != 1 {
		t.Errorf("the same failure logged %d times, want once:\n%s", got, log.String())
	}
	holders.err = nil
	if _, err := exp.Scrape(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(log.String(), "pod labels available again\n") {
		t.Errorf("recovery not logged:\n%s", log.String())
	}
}

func TestXIDEventsBecomeTheLastXIDSeries(t *testing.T) {
	fake := &fakeTelemetry{sample: sampleOf(fullGPU(0), fullGPU(1)), events: make(chan nvml.Event)}
	exp := New(fake, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := exp.WatchEvents(ctx); err != nil {
		t.Fatal(err)
	}
	scrape := func() string {
		s, err := exp.Scrape(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return string(s.Body)
	}
	if body := scrape(); strings.Contains(body, "DCGM_FI_DEV_XID_ERRORS") {
		t.Fatalf("an XID series before any XID:\n%s", body)
	}
	fake.events <- nvml.Event{Kind: nvml.EventXID, GPUIndex: 1, UUID: fullGPU(1).UUID, XID: 48}
	fake.events <- nvml.Event{Kind: nvml.EventECCSingleBit, GPUIndex: 0, UUID: fullGPU(0).UUID, Data: 1}
	fake.events <- nvml.Event{Kind: nvml.EventXID, GPUIndex: 1, UUID: fullGPU(1).UUID, XID: 13}
	fake.events <- nvml.Event{Kind: nvml.EventXID, GPUIndex: 0, XID: 31} // no UUID: by index
	// The unbuffered channel handed the last event over; Record may still
	// be running: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	var body string
	for body = scrape(); strings.Count(body, "DCGM_FI_DEV_XID_ERRORS{") < 2 && time.Now().Before(deadline); body = scrape() {
		time.Sleep(time.Millisecond)
	}
	for _, want := range []string{`DCGM_FI_DEV_XID_ERRORS{gpu="0",`, `err_code="31"`, `DCGM_FI_DEV_XID_ERRORS{gpu="1",`, `err_code="13"`} {
		if !strings.Contains(body, want) {
			t.Errorf("exposition lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, `err_code="48"`) {
		t.Errorf("GPU 1 shows XID 48, not its last XID 13:\n%s", body)
	}
}

func TestWatchEventsWithoutAnEventSet(t *testing.T) {
	exp := New(&fakeTelemetry{sample: sampleOf(fullGPU(0))}, Options{Log: io.Discard})
	if err := exp.WatchEvents(context.Background()); err == nil {
		t.Error("WatchEvents succeeded on a Telemetry without events")
	}
}
