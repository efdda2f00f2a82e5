package telemetry

import (
	"cmp"
	"slices"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// Recorder keeps what a monitoring run saw, for its summary, and derives
// the events NVML does not report from successive samples. It is not safe
// for concurrent use: the monitor loop owns it.
type Recorder struct {
	samples     int
	start, end  time.Time
	gpus        map[int]*gpuRecord
	events      []nvml.Event // XID, ECC, unavailable and lost events, in order
	eventCounts map[nvml.EventKind]int
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{gpus: map[int]*gpuRecord{}, eventCounts: map[nvml.EventKind]int{}}
}

// gpuRecord is one GPU's running tally.
type gpuRecord struct {
	index      int
	uuid, name string
	samples    int
	last       *nvml.GPUSample

	util, memUtil, memUsed, temp, power, smClock tally
	memTotal                                     *uint64

	reasonSamples  map[uint64]int // samples with each slowdown bit set
	reasonReadings int            // samples with a reasons reading

	peak       *PeakMemory
	heldMaxMiB uint64 // most memory processes held at one sample
	mig        bool
	lostAt     *time.Time
	eccFirst   *uint64 // uncorrected volatile ECC count, first and last reading
	eccLast    *uint64
	xids       map[uint64]int
}

// tally is a running min / mean / max.
type tally struct {
	n             int
	min, max, sum float64
}

func (t *tally) add(v float64) {
	if t.n == 0 || v < t.min {
		t.min = v
	}
	if t.n == 0 || v > t.max {
		t.max = v
	}
	t.n++
	t.sum += v
}

func (t tally) stat() *Stat {
	if t.n == 0 {
		return nil
	}
	return &Stat{Min: t.min, Mean: t.sum / float64(t.n), Max: t.max}
}

func addUint[T uint32 | uint64](t *tally, v *T) {
	if v != nil {
		t.add(float64(*v))
	}
}

// AddSample records one sample and returns the events derived from it
// (throttling started or stopped, a GPU lost), which it also records.
func (r *Recorder) AddSample(s nvml.TelemetrySample) []nvml.Event {
	if r.samples == 0 {
		r.start = s.Time
	}
	r.samples++
	r.end = s.Time
	var derived []nvml.Event
	for _, g := range s.GPUs {
		rec := r.gpu(g.Index)
		derived = append(derived, deriveEvents(rec.last, g, s.Time)...)
		rec.add(g, s.Time)
	}
	for _, ev := range derived {
		r.record(ev)
	}
	return derived
}

// AddEvent records an event NVML reported and returns it with its Detail
// filled in (an XID's meaning).
func (r *Recorder) AddEvent(ev nvml.Event) nvml.Event {
	ev = Describe(ev)
	r.record(ev)
	return ev
}

func (r *Recorder) record(ev nvml.Event) {
	r.eventCounts[ev.Kind]++
	if ev.Kind == nvml.EventThrottleStart || ev.Kind == nvml.EventThrottleStop {
		return // summarized as time shares
	}
	r.events = append(r.events, ev)
	// An event on a GPU no sample listed (NVML could not say which) is
	// kept in the list but has no GPU to be counted on.
	rec, ok := r.gpus[ev.GPUIndex]
	if !ok {
		return
	}
	switch ev.Kind {
	case nvml.EventXID:
		if rec.xids == nil {
			rec.xids = map[uint64]int{}
		}
		rec.xids[ev.XID]++
	case nvml.EventGPULost:
		if rec.lostAt == nil {
			at := ev.Time
			rec.lostAt = &at
		}
	}
}

func (r *Recorder) gpu(index int) *gpuRecord {
	rec, ok := r.gpus[index]
	if !ok {
		rec = &gpuRecord{index: index, reasonSamples: map[uint64]int{}}
		r.gpus[index] = rec
	}
	return rec
}

func (rec *gpuRecord) add(g nvml.GPUSample, at time.Time) {
	rec.samples++
	if g.UUID != "" {
		rec.uuid = g.UUID
	}
	if g.Name != "" {
		rec.name = g.Name
	}
	addUint(&rec.util, g.UtilizationGPU)
	addUint(&rec.memUtil, g.UtilizationMemory)
	addUint(&rec.temp, g.TemperatureC)
	addUint(&rec.smClock, g.SMClockMHz)
	if g.PowerDrawW != nil {
		rec.power.add(*g.PowerDrawW)
	}
	if g.MemoryTotalMiB != nil {
		rec.memTotal = g.MemoryTotalMiB
	}
	if len(g.MIG) > 0 {
		rec.mig = true
	}
	if g.ThrottleReasons != nil {
		rec.reasonReadings++
		for _, reason := range nvml.ThrottleReasons {
			if reason.Slowdown && *g.ThrottleReasons&reason.Bit != 0 {
				rec.reasonSamples[reason.Bit]++
			}
		}
	}
	if g.ECC.UncorrectedVolatile != nil {
		if rec.eccFirst == nil {
			rec.eccFirst = g.ECC.UncorrectedVolatile
		}
		rec.eccLast = g.ECC.UncorrectedVolatile
	}
	procs := processes(g)
	var held uint64
	for _, p := range procs {
		held += p.UsedMemoryMiB
	}
	rec.heldMaxMiB = max(rec.heldMaxMiB, held)
	if used, ok := memoryUsed(g); ok {
		rec.memUsed.add(float64(used))
		if rec.peak == nil || used > rec.peak.UsedMiB {
			rec.peak = &PeakMemory{UsedMiB: used, TotalMiB: g.MemoryTotalMiB, Time: at, Process: topProcess(procs)}
		}
	}
	last := g
	rec.last = &last
}

// memoryUsed is a GPU's used memory; on a MIG GPU that does not report it
// whole, the sum over its MIG devices.
func memoryUsed(g nvml.GPUSample) (uint64, bool) {
	if g.MemoryUsedMiB != nil {
		return *g.MemoryUsedMiB, true
	}
	var sum uint64
	var read bool
	for _, m := range g.MIG {
		if m.MemoryUsedMiB != nil {
			sum += *m.MemoryUsedMiB
			read = true
		}
	}
	return sum, read
}

// processes are the compute processes on a GPU and on its MIG devices.
func processes(g nvml.GPUSample) []nvml.Process {
	procs := slices.Clone(g.Processes)
	for _, m := range g.MIG {
		procs = append(procs, m.Processes...)
	}
	return procs
}

// topProcess is the process holding the most memory; nil when none.
func topProcess(procs []nvml.Process) *nvml.Process {
	if len(procs) == 0 {
		return nil
	}
	top := slices.MaxFunc(procs, func(a, b nvml.Process) int { return cmp.Compare(a.UsedMemoryMiB, b.UsedMemoryMiB) })
	return &top
}

// percent is n of total as a percentage; 0 when total is 0.
func percent(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(total)
}
