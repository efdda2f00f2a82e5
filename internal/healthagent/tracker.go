package healthagent

import (
	"fmt"
	"sort"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// This file owns turning NVML's samples and events into faults. Three kinds
// of fault, by what ends them:
//
//   - Held faults come from an event (a critical XID, a double-bit ECC
//     event) and stand until the GPU is reset: it answers again after
//     being lost, or a counter NVML keeps since the driver loaded (energy,
//     volatile ECC) went backwards. A new boot ends them too: the agent
//     then starts with no state (state.go).
//   - State faults are what the GPU reports now: lost
//     (ERROR_GPU_IS_LOST), uncorrected volatile ECC errors, a row remap
//     failure or pending retirement, fewer GPUs than expected. They stand
//     while the GPU reports them; the volatile ECC count and pending
//     remaps go to zero only at a reset (nvml.h: "Volatile counts are
//     reset each time the driver loads"; a pending remap "requires a GPU
//     reset").
//   - Growth faults come from counters that grow (PCIe replays, NVLink
//     errors) and from XIDs outside EKS's well-known list: they stand while
//     the counter (or the XID) grew within the last window, and clear after
//     a whole window without growth.

// tracker holds the faults of one node. It is not safe for concurrent use.
type tracker struct {
	// window is how long a growth fault stands after the last growth.
	window time.Duration
	// expected is how many GPUs the node should have; 0: no expectation.
	expected int

	gpus map[int]*gpuTrack
	// held are the faults that stand until a reset, by Fault.Key.
	held map[string]*gpuhealth.Fault
	// xidOther are the non-critical XIDs seen, by Fault.Key, with when
	// the last one came.
	xidOther map[string]*xidGrowth
	// driver is the Unknown verdict while NVML gives no GPUs to judge;
	// nil once a sample lists GPUs.
	driver *gpuhealth.Verdict
	// sampled: a sample listed the GPUs (count is meaningful).
	sampled bool
	count   int
	// firstSeen is when each standing fault was first listed, by key.
	firstSeen map[string]time.Time
}

// gpuTrack is what the tracker remembers of one GPU between samples.
type gpuTrack struct {
	ref gpuhealth.GPURef
	// lost: the last sample answered ERROR_GPU_IS_LOST.
	lost bool
	// sinceLoad are the counters NVML keeps since the driver loaded, last
	// read; a reading lower than these is a reset.
	sinceLoad sinceLoadCounters
	// Current state from the last sample that read it.
	eccUncorrected    uint64
	remapFailure      bool
	retirementPending bool
	pcie, nvlink      counterTrack
}

// sinceLoadCounters are the counters NVML keeps since the driver loaded;
// nil: not read.
type sinceLoadCounters struct {
	EnergyMJ       *uint64 `json:"energy_mj,omitempty"`
	ECCUncorrected *uint64 `json:"ecc_uncorrected,omitempty"`
	ECCCorrected   *uint64 `json:"ecc_corrected,omitempty"`
}

// wentBackwards says whether any counter of now is lower than in c.
func (c sinceLoadCounters) wentBackwards(now sinceLoadCounters) bool {
	lower := func(before, after *uint64) bool { return before != nil && after != nil && *after < *before }
	return lower(c.EnergyMJ, now.EnergyMJ) || lower(c.ECCUncorrected, now.ECCUncorrected) || lower(c.ECCCorrected, now.ECCCorrected)
}

// merge keeps c's counters that now does not read.
func (c sinceLoadCounters) merge(now sinceLoadCounters) sinceLoadCounters {
	pick := func(before, after *uint64) *uint64 {
		if after != nil {
			return after
		}
		return before
	}
	return sinceLoadCounters{pick(c.EnergyMJ, now.EnergyMJ), pick(c.ECCUncorrected, now.ECCUncorrected), pick(c.ECCCorrected, now.ECCCorrected)}
}

// counterTrack follows a counter whose growth is a growth fault.
type counterTrack struct {
	last *uint64
	grown
}

// grown is a growth fault's state: when it first and last grew, and by
// how much in all.
type grown struct {
	since, last time.Time
	by          uint64
}

// standing says whether the growth is within window of now.
func (g grown) standing(now time.Time, window time.Duration) bool {
	return !g.last.IsZero() && now.Sub(g.last) < window
}

// add records a growth of by at now; a growth after a whole window
// without one starts a new fault.
func (g *grown) add(now time.Time, by uint64, window time.Duration) {
	if !g.standing(now, window) {
		g.since, g.by = now, 0
	}
	g.last = now
	g.by += by
}

// observe records the counter's reading v at now.
func (c *counterTrack) observe(now time.Time, v *uint64, window time.Duration) {
	if v == nil {
		return
	}
	if c.last != nil && *v > *c.last {
		c.add(now, *v-*c.last, window)
	}
	c.last = v
}

func newTracker(window time.Duration, expected int) *tracker {
	return &tracker{
		window: window, expected: expected,
		gpus: map[int]*gpuTrack{}, held: map[string]*gpuhealth.Fault{}, xidOther: map[string]*xidGrowth{},
		firstSeen: map[string]time.Time{},
	}
}

// gpu returns GPU index's track, creating it.
func (t *tracker) gpu(index int) *gpuTrack {
	g := t.gpus[index]
	if g == nil {
		g = &gpuTrack{ref: gpuhealth.GPURef{Index: index}}
		t.gpus[index] = g
	}
	return g
}

// Observe takes one sample (or the error Sample returned).
func (t *tracker) Observe(s nvml.TelemetrySample, err error) {
	switch {
	case err != nil:
		v := gpuhealth.Unknown(gpuhealth.ReasonNVMLError, fmt.Sprintf("NVML cannot read the GPUs: %v", err))
		t.driver = &v
		return
	case !s.Driver.Loaded:
		reason := s.Driver.Reason
		if reason == "" {
			reason = "no NVIDIA driver loaded"
		}
		v := gpuhealth.Unknown(gpuhealth.ReasonDriverNotLoaded, reason+"; the agent checks again every sample")
		t.driver = &v
		return
	case len(s.GPUs) == 0:
		v := gpuhealth.Unknown(gpuhealth.ReasonNoGPU, fmt.Sprintf("the NVIDIA driver %s is loaded but NVML lists no GPU", s.Driver.Version))
		t.driver = &v
		return
	}
	t.driver, t.sampled, t.count = nil, true, len(s.GPUs)
	for i := range s.GPUs {
		t.observeGPU(s.Time, &s.GPUs[i])
	}
}

func (t *tracker) observeGPU(now time.Time, s *nvml.GPUSample) {
	g := t.gpu(s.Index)
	if s.UUID != "" {
		g.ref.UUID = s.UUID
	}
	if s.PCIBusID != "" {
		g.ref.PCIBusID = s.PCIBusID
	}
	if s.Lost {
		g.lost = true
		return
	}
	counters := sinceLoadCounters{EnergyMJ: s.EnergyMilliJoules, ECCUncorrected: s.ECC.UncorrectedVolatile, ECCCorrected: s.ECC.CorrectedVolatile}
	if g.lost || g.sinceLoad.wentBackwards(counters) {
		// It answers again after being lost, or its counters started
		// over: the GPU was reset.
		t.reset(g)
	}
	g.lost = false
	g.sinceLoad = g.sinceLoad.merge(counters)
	g.eccUncorrected = deref(s.ECC.UncorrectedVolatile)
	g.remapFailure = derefBool(s.ECC.RemapFailure)
	g.retirementPending = derefBool(s.ECC.RemapPending) || derefBool(s.ECC.RetiredPending)
	g.pcie.observe(now, s.PCIeReplays, t.window)
	if s.NVLinkErrors != nil {
		e := s.NVLinkErrors
		sum := e.CRCFlit + e.CRCData + e.Replay + e.Recovery
		g.nvlink.observe(now, &sum, t.window)
	}
}

// reset forgets the held faults of GPU g and the growth it had shown.
func (t *tracker) reset(g *gpuTrack) {
	for key, f := range t.held {
		if f.GPU != nil && f.GPU.Index == g.ref.Index {
			delete(t.held, key)
		}
	}
	for key, x := range t.xidOther {
		if x.fault.GPU != nil && x.fault.GPU.Index == g.ref.Index {
			delete(t.xidOther, key)
		}
	}
	g.pcie.grown, g.nvlink.grown = grown{}, grown{}
}

// Event takes one NVML event.
func (t *tracker) Event(e nvml.Event) {
	var ref *gpuhealth.GPURef
	if e.GPUIndex >= 0 {
		g := t.gpu(e.GPUIndex)
		if e.UUID != "" {
			g.ref.UUID = e.UUID
		}
		r := g.ref
		ref = &r
	}
	switch e.Kind {
	case nvml.EventXID:
		f := gpuhealth.Fault{Class: gpuhealth.ClassXIDCritical, GPU: ref, XID: e.XID, Count: 1, Since: e.Time}
		if gpuhealth.CriticalXID(e.XID) {
			t.hold(f)
			return
		}
		f.Class = gpuhealth.ClassXIDOther
		x := t.xidOther[f.Key()]
		if x == nil {
			x = &xidGrowth{fault: f}
			t.xidOther[f.Key()] = x
		}
		x.add(e.Time, 1, t.window)
	case nvml.EventECCDoubleBit:
		t.hold(gpuhealth.Fault{Class: gpuhealth.ClassECCUncorrectable, GPU: ref, Count: 1, Since: e.Time})
	}
}

// xidGrowth is a non-critical XID: a growth fault.
type xidGrowth struct {
	fault gpuhealth.Fault
	grown
}

// hold adds a held fault, or counts it again.
func (t *tracker) hold(f gpuhealth.Fault) {
	if h := t.held[f.Key()]; h != nil {
		h.Count++
		return
	}
	t.held[f.Key()] = &f
}

// Verdict judges the faults standing at now; fatal are the classes that
// turn the condition False.
func (t *tracker) Verdict(now time.Time, fatal []gpuhealth.FaultClass) gpuhealth.Verdict {
	if t.driver != nil {
		return *t.driver
	}
	return gpuhealth.Judge(t.Faults(now), fatal)
}

// Faults lists the faults standing at now, by GPU index (the node's own
// first), then by class and XID.
func (t *tracker) Faults(now time.Time) []gpuhealth.Fault {
	byKey := map[string]gpuhealth.Fault{}
	for key, f := range t.held {
		byKey[key] = *f
	}
	for key, x := range t.xidOther {
		if x.standing(now, t.window) {
			f := x.fault
			f.Count, f.Since = x.by, x.since
			byKey[key] = f
		}
	}
	for _, g := range t.gpus {
		for _, f := range t.stateFaults(now, g) {
			if held, ok := byKey[f.Key()]; ok {
				// The event and the state say the same: keep the event's
				// start and the larger count.
				f.Since, f.Count = held.Since, max(f.Count, held.Count)
			}
			byKey[f.Key()] = f
		}
	}
	if t.sampled && t.expected > 0 && t.count < t.expected {
		f := gpuhealth.DeviceCountFault(t.count, t.expected, nil, now)
		byKey[f.Key()] = f
	}
	faults := make([]gpuhealth.Fault, 0, len(byKey))
	for key, f := range byKey {
		// A fault that stands from one sample to the next keeps the
		// time it was first seen, so its message does not change.
		if first, ok := t.firstSeen[key]; ok && first.Before(f.Since) {
			f.Since = first
		}
		t.firstSeen[key] = f.Since
		faults = append(faults, f)
	}
	for key := range t.firstSeen {
		if _, ok := byKey[key]; !ok {
			delete(t.firstSeen, key)
		}
	}
	sort.Slice(faults, func(i, j int) bool {
		a, b := faults[i], faults[j]
		if ai, bi := gpuIndex(a), gpuIndex(b); ai != bi {
			return ai < bi
		}
		if ra, rb := classRank(a.Class), classRank(b.Class); ra != rb {
			return ra < rb
		}
		return a.XID < b.XID
	})
	return faults
}

// stateFaults are the faults GPU g reports now.
func (t *tracker) stateFaults(now time.Time, g *gpuTrack) []gpuhealth.Fault {
	ref := g.ref
	var out []gpuhealth.Fault
	add := func(class gpuhealth.FaultClass, count uint64) {
		out = append(out, gpuhealth.Fault{Class: class, GPU: &ref, Count: count, Since: now})
	}
	if g.lost {
		// A lost GPU is XID 79's state; the XID's own fault says it when
		// its event was seen.
		if _, seen := t.held[(gpuhealth.Fault{Class: gpuhealth.ClassXIDCritical, GPU: &ref, XID: 79}).Key()]; !seen {
			add(gpuhealth.ClassGPULost, 1)
		}
		return out
	}
	if g.eccUncorrected > 0 {
		add(gpuhealth.ClassECCUncorrectable, g.eccUncorrected)
	}
	if g.remapFailure {
		add(gpuhealth.ClassRowRemapFailure, 1)
	}
	if g.retirementPending {
		add(gpuhealth.ClassRetirementPending, 1)
	}
	if g.pcie.standing(now, t.window) {
		add(gpuhealth.ClassPCIeReplays, g.pcie.by)
		out[len(out)-1].Since = g.pcie.since
	}
	if g.nvlink.standing(now, t.window) {
		add(gpuhealth.ClassNVLinkErrors, g.nvlink.by)
		out[len(out)-1].Since = g.nvlink.since
	}
	return out
}

func gpuIndex(f gpuhealth.Fault) int {
	if f.GPU == nil {
		return -1
	}
	return f.GPU.Index
}

func classRank(c gpuhealth.FaultClass) int {
	for i, k := range gpuhealth.AllClasses() {
		if k == c {
			return i
		}
	}
	return len(gpuhealth.AllClasses())
}

func deref(v *uint64) uint64 {
	if v == nil {
		return 0
	}
	return *v
}

func derefBool(v *bool) bool { return v != nil && *v }
