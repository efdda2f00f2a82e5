package healthagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// LabelGPUCount is the node label that says how many GPUs the node has
// when Settings.ExpectedGPUs is 0 (GPU Feature Discovery's).
const LabelGPUCount = "nvidia.com/gpu.count"

// Options configure Run.
type Options struct {
	// NodeName is the node the agent runs on and reports for.
	NodeName string
	// Client reaches the API server.
	Client kubernetes.Interface
	// Telemetry reads the GPUs; the caller closes it.
	Telemetry nvml.Telemetry
	Settings  gpuhealth.Settings
	// Now stamps faults, conditions and Events; nil: time.Now.
	Now func() time.Time
	// Log receives a line per published change and per API server outage;
	// nil: none.
	Log io.Writer
}

// Run keeps NodeName's condition, annotations, taint and Events up to date
// until ctx ends, and then spends a few seconds taking NVML's last events
// and writing what it has not written yet. It never returns for a missing
// driver or an unreachable API server (it reports Unknown, or retries);
// only ctx ends it, and then it returns nil. It returns an error at once
// only for Options it cannot run with.
func Run(ctx context.Context, opts Options) error {
	switch {
	case opts.NodeName == "":
		return errors.New("health agent: no node name: pass --node-name or set NODE_NAME (the downward API's spec.nodeName)")
	case opts.Client == nil:
		return errors.New("health agent: no Kubernetes client")
	case opts.Telemetry == nil:
		return errors.New("health agent: no NVML telemetry")
	}
	if err := opts.Settings.Validate(); err != nil {
		return err
	}
	a := newAgent(opts)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); a.pub.run(ctx) }()
	a.loop(ctx)
	cancel()
	wg.Wait()
	a.flush()
	return nil
}

// agent is Run's state; loop owns it.
type agent struct {
	opts     Options
	now      func() time.Time
	log      *logger
	tracker  *tracker
	damper   *gpuhealth.Damper
	pub      *publisher
	restored bool   // the node was read: its state restored, the GPU count known
	reported bool   // a verdict was handed to the publisher
	bootID   string // the node's boot ID
	// degraded are the keys of the degrading faults standing, for their
	// Warning Event when one starts.
	degraded map[string]bool
	// saved is the state last handed to the publisher.
	saved savedState
	// retry is when the damper wants the verdict offered again.
	retry *time.Timer
}

func newAgent(opts Options) *agent {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	log := &logger{w: opts.Log}
	// A growth fault stands for a damping interval after the counter last
	// grew (two samples at least, so one sample without growth never
	// clears it).
	window := max(opts.Settings.Damping, 2*opts.Settings.SampleInterval)
	return &agent{
		opts: opts, now: now, log: log,
		tracker:  newTracker(window, opts.Settings.ExpectedGPUs),
		damper:   &gpuhealth.Damper{Interval: opts.Settings.Damping},
		pub:      newPublisher(opts.Client, opts.NodeName, opts.Settings.Taint, now, log),
		degraded: map[string]bool{},
	}
}

// loop samples, takes events and publishes until ctx ends.
func (a *agent) loop(ctx context.Context) {
	ticker := time.NewTicker(a.opts.Settings.SampleInterval)
	defer ticker.Stop()
	a.retry = time.NewTimer(time.Hour)
	a.retry.Stop()
	defer a.retry.Stop()

	// The watch outlives ctx until finish has taken what it read.
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWatch()
	var events <-chan nvml.Event
	watch := func() {
		if events != nil {
			return
		}
		ch, err := a.opts.Telemetry.WatchEvents(watchCtx)
		if err != nil {
			return // no driver or no GPU yet: the verdict says so; tried again every sample
		}
		events = ch
	}
	a.sample()
	watch()
	a.evaluate()
	for {
		select {
		case <-ctx.Done():
			a.finish(stopWatch, events)
			return
		case <-ticker.C:
			a.sample()
			watch()
		case e, ok := <-events:
			if !ok {
				events = nil // NVML was shut down under the watch: watch again next sample
				continue
			}
			a.tracker.Event(e)
			if e.Kind == nvml.EventGPUUnavailable {
				a.sample() // what the GPU answers now says whether it is lost
			}
		case node := <-a.pub.firstNode:
			a.restore(node)
		case count := <-a.pub.gpuCount:
			a.expectGPUs(count)
		case <-a.retry.C:
		}
		a.evaluate()
	}
}

// finish takes the events NVML still holds or the watch has not handed
// over yet, and judges once more, so that Run's last write has them: NVML
// delivers an event once, and one dropped here is lost to the next agent
// too. It reads for one NVML wait, then ends the watch and takes what is
// left, for two waits at most: a watch stuck in NVML (a wedged GPU) must
// not keep the last writes from happening.
func (a *agent) finish(stopWatch context.CancelFunc, events <-chan nvml.Event) {
	if events != nil && !a.takeEvents(events, nvml.EventWait) {
		stopWatch()
		a.takeEvents(events, 2*nvml.EventWait)
	}
	stopWatch()
	a.evaluate()
}

// takeEvents hands events to the tracker for d at most, and says whether
// the watch closed the channel meanwhile.
func (a *agent) takeEvents(events <-chan nvml.Event, d time.Duration) (closed bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return true
			}
			a.tracker.Event(e)
		case <-timer.C:
			return false
		}
	}
}

// flush writes what the agent has not written yet, for flushTimeout at
// most. A node first read in these last moments (its read still waiting
// for the loop, or made by the flush itself) is restored and judged first:
// the faults of the last moments are not dropped for want of it.
func (a *agent) flush() {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	a.pub.flush(ctx)
	select {
	case node := <-a.pub.firstNode:
		a.restore(node)
		a.evaluate()
		a.pub.flush(ctx)
	default:
	}
}

func (a *agent) sample() {
	s, err := a.opts.Telemetry.Sample(nvml.SampleOptions{})
	if s.Time.IsZero() {
		s.Time = a.now()
	}
	a.tracker.Observe(s, err)
}

// restore takes the node as first read: the state a previous agent of this
// boot saved, and the GPU count its label says when Settings.ExpectedGPUs
// does not.
func (a *agent) restore(node *corev1.Node) {
	a.restored = true
	a.bootID = node.Status.NodeInfo.BootID
	a.expectGPUs(node.Labels[LabelGPUCount])
	saved, err := decodeState(node.Annotations[AnnotationState])
	switch {
	case err != nil:
		a.log.printf("ignoring the saved state: %v", err)
	case saved.BootID != a.bootID:
		// A reboot reset every GPU: start afresh.
	default:
		a.tracker.restore(saved)
		if n := len(saved.Faults); n > 0 {
			a.log.printf("restored %d standing faults saved by the agent before this one (boot %s)", n, a.bootID)
		}
	}
}

// expectGPUs takes the node's GPU count label as the GPUs to expect,
// unless Settings.ExpectedGPUs says how many.
func (a *agent) expectGPUs(label string) {
	if a.opts.Settings.ExpectedGPUs > 0 {
		return
	}
	n, err := strconv.Atoi(label)
	if err != nil || n < 0 {
		n = 0 // no label (or not a count): no expectation
	}
	a.tracker.expected = n
}

// evaluate judges the faults now and hands what changed to the publisher.
// Nothing is published before the node was read: its saved state may hold
// faults the verdict must include.
func (a *agent) evaluate() {
	if !a.restored {
		return
	}
	now := a.now()
	v := a.tracker.Verdict(now, a.opts.Settings.Fatal)
	a.warnDegraded(v.Degraded)
	state := a.tracker.save()
	state.BootID = a.bootID
	offerAt := now
	if !a.reported {
		// The agent's first report is not a change of the condition: it
		// starts no damping interval, so the first fault after a start is
		// published at once too.
		offerAt = now.Add(-a.damper.Interval)
	}
	publish, retryAt := a.damper.Offer(offerAt, v)
	if publish != nil {
		a.reported = true
	}
	switch {
	case publish != nil:
		a.saved = state
		a.pub.set(*publish, state)
	case !state.sameFaults(a.saved):
		// Keep a new held fault on the node at once, even while the
		// condition is damped: a restart must not forget it.
		a.saved = state
		a.pub.setState(state)
	}
	if !retryAt.IsZero() {
		a.retry.Reset(max(retryAt.Sub(now), time.Millisecond))
	}
}

// warnDegraded writes a Warning Event for each degrading fault that starts.
func (a *agent) warnDegraded(faults []gpuhealth.Fault) {
	standing := map[string]bool{}
	for _, f := range faults {
		key := f.Key()
		standing[key] = true
		if !a.degraded[key] {
			a.pub.event(corev1.EventTypeWarning, f.Reason(), f.Message())
		}
	}
	a.degraded = standing
}

// logger writes the agent's log lines.
type logger struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *logger) printf(format string, args ...any) {
	if l.w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
}
