package dcgm

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/podresources"
)

// Options configure an Exporter.
type Options struct {
	// Hostname is the host label's value; "" leaves it out.
	Hostname string
	// HostnameLabel is the host label's name or names; the zero value is
	// hostname, dcgm-exporter 4.6.0-4.8.3's and later.
	HostnameLabel HostnameLabel
	// MaxAge is how long a pass serves scrapes: a scrape within MaxAge of
	// the last pass gets that pass's exposition. 0 makes every scrape run a
	// pass (still never two at once).
	MaxAge time.Duration
	// Holders lists which container holds each device; nil adds no pod
	// labels.
	Holders HolderLister
	// Log receives one line per problem that does not fail a scrape (pod
	// labels unavailable, events unavailable); nil discards them.
	Log io.Writer
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// HolderLister says which container holds each GPU and MIG device;
// podresources.Lister is one.
type HolderLister interface {
	Devices(ctx context.Context) (map[string]podresources.Container, error)
}

// Exporter turns NVML samples into dcgm-exporter's exposition, a bounded
// number of NVML passes however many scrapers there are.
type Exporter struct {
	tel  nvml.Telemetry
	opts Options

	mu       sync.Mutex
	last     *Scrape   // the newest pass that succeeded
	inflight *pass     // the pass running now
	waiting  int       // scrapers waiting on inflight (tests watch it)
	xids     xidRecord // guarded by mu
	podErr   string    // the last pod-label error logged

	logMu sync.Mutex // serializes writes to opts.Log
}

// Scrape is the exposition of one pass.
type Scrape struct {
	Body []byte
	// At is when the pass started.
	At time.Time
	// GPUs is how many GPUs the sample holds.
	GPUs int
}

// pass is a pass in flight; done closes when scrape or err is set.
type pass struct {
	done   chan struct{}
	scrape *Scrape
	err    error
}

// NoDriverError is returned when NVML finds no driver: there is nothing to
// serve.
type NoDriverError struct{ Reason string }

func (e *NoDriverError) Error() string { return e.Reason }

// New returns an Exporter over tel. It calls nothing until the first
// Scrape.
func New(tel nvml.Telemetry, opts Options) *Exporter {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	return &Exporter{tel: tel, opts: opts, xids: xidRecord{}}
}

// Scrape returns the exposition of the last pass when it is younger than
// MaxAge, and otherwise runs a pass, or waits for the one running and shares
// it. A pass runs to its end even if ctx ends first: its result serves the
// scrapers after.
func (e *Exporter) Scrape(ctx context.Context) (*Scrape, error) {
	e.mu.Lock()
	if e.last != nil && e.opts.Now().Sub(e.last.At) < e.opts.MaxAge {
		last := e.last
		e.mu.Unlock()
		return last, nil
	}
	p := e.inflight
	if p == nil {
		p = &pass{done: make(chan struct{})}
		e.inflight = p
		go e.run(p)
	}
	e.waiting++
	e.mu.Unlock()

	defer func() {
		e.mu.Lock()
		e.waiting--
		e.mu.Unlock()
	}()
	select {
	case <-p.done:
		return p.scrape, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run runs one pass: a Sample, the pod lookup, the exposition.
func (e *Exporter) run(p *pass) {
	at := e.opts.Now()
	scrape, err := e.collect(at)

	e.mu.Lock()
	if err == nil {
		e.last = scrape
	}
	e.inflight = nil
	e.mu.Unlock()

	p.scrape, p.err = scrape, err
	close(p.done)
}

func (e *Exporter) collect(at time.Time) (*Scrape, error) {
	sample, err := e.tel.Sample(nvml.SampleOptions{})
	if err != nil {
		return nil, fmt.Errorf("sampling the GPUs: %w", err)
	}
	if !sample.Driver.Loaded {
		return nil, &NoDriverError{Reason: sample.Driver.Reason}
	}
	p := Pass{Sample: sample, Hostname: e.opts.Hostname, HostnameLabel: e.opts.HostnameLabel, Holders: e.holders()}
	e.mu.Lock()
	p.XIDs = e.xids.byUUID(sample)
	e.mu.Unlock()
	return &Scrape{Body: Append(nil, p), At: at, GPUs: len(sample.GPUs)}, nil
}

// holders asks which container holds each device. A failure costs the pod
// labels of this pass, not the scrape; it is logged when it changes.
func (e *Exporter) holders() map[string]podresources.Container {
	if e.opts.Holders == nil {
		return nil
	}
	// Not the scraper's context: the pass serves every scraper waiting.
	holders, err := e.opts.Holders.Devices(context.Background())
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	e.mu.Lock()
	changed := msg != e.podErr
	e.podErr = msg
	e.mu.Unlock()
	switch {
	case changed && err != nil:
		e.logf("pod labels unavailable: %v", err)
	case changed:
		e.logf("pod labels available again")
	}
	return holders
}

// xidRecord is the last XID seen per GPU, by UUID, and by index for events
// that carry no UUID.
type xidRecord map[string]uint64

func indexKey(i int) string { return fmt.Sprintf("#%d", i) }

func (r xidRecord) byUUID(s nvml.TelemetrySample) map[string]uint64 {
	if len(r) == 0 {
		return nil
	}
	out := map[string]uint64{}
	for _, g := range s.GPUs {
		if xid, ok := r[g.UUID]; ok && g.UUID != "" {
			out[g.UUID] = xid
		} else if xid, ok := r[indexKey(g.Index)]; ok {
			out[g.UUID] = xid
		}
	}
	return out
}

// Record notes an NVML event: an XID becomes its GPU's
// DCGM_FI_DEV_XID_ERRORS from the next pass on. Other events are ignored.
func (e *Exporter) Record(ev nvml.Event) {
	if ev.Kind != nvml.EventXID {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if ev.UUID != "" {
		e.xids[ev.UUID] = ev.XID
		return
	}
	e.xids[indexKey(ev.GPUIndex)] = ev.XID
}

// WatchEvents records NVML's events until ctx ends. It returns an error
// when NVML offers no events (no driver, no event set); then XIDs are not
// reported.
func (e *Exporter) WatchEvents(ctx context.Context) error {
	events, err := e.tel.WatchEvents(ctx)
	if err != nil {
		return err
	}
	go func() {
		for ev := range events {
			e.Record(ev)
		}
		if ctx.Err() == nil {
			e.logf("NVML stopped reporting events: XID errors are no longer updated")
		}
	}()
	return nil
}

func (e *Exporter) logf(format string, args ...any) {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	fmt.Fprintf(e.opts.Log, format+"\n", args...)
}
