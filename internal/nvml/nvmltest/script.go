package nvmltest

import (
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns GPUs over time: a virtual clock, and scripted series of
// steps that change what a GPU answers from one step to the next.
//
// The clock starts at clockStart and moves only on Advance, by StepDuration.
// A GPU's current step is the one that just elapsed: its utilization
// samples lie in the StepDuration before the clock's time, the last one at
// it. Script puts a GPU on its first step at once, without moving the
// clock; Advance moves every scripted GPU to its next step (staying on the
// last, which then repeats: its samples again, its counters growing) and
// then, for every GPU, scripted or not, adds the step's worth of energy
// (PowerDrawMW × StepDuration) and of violation time (StepDuration for each
// policy whose throttle reasons are set; see violationReasons).

// clockStart is the virtual clock's time before the first Advance.
var clockStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// sampleBufferLen is how many samples a GPU's buffer keeps per kind, the
// oldest dropped first.
const sampleBufferLen = 120

// Step is what a scripted GPU does for one StepDuration. A field left zero
// is zero during the step (no utilization, no processes, clocks at 0 MHz):
// a step describes the whole GPU.
type Step struct {
	// UtilizationSamples are the GPU utilization percentages the driver
	// buffers during the step (NVML_GPU_UTILIZATION_SAMPLES), spread evenly
	// over it. The last is also what nvmlDeviceGetUtilizationRates answers;
	// none leaves the buffer without new samples and the rate at 0.
	UtilizationSamples []uint32
	// MemoryUtilization is the memory utilization percentage, buffered
	// (NVML_MEMORY_UTILIZATION_SAMPLES) with each GPU utilization sample.
	MemoryUtilization uint32
	MemoryUsedMiB     uint64
	TemperatureC      uint32
	PowerDrawMW       uint32
	SMClockMHz        uint32 // the graphics clock too
	MemoryClockMHz    uint32
	ThrottleReasons   uint64 // nvmlClocksEventReason* bits
	PCIeTxKBps        uint32
	PCIeRxKBps        uint32
	Processes         []gonvml.ProcessInfo
	// CorrectedECC and UncorrectedECC are the ECC errors the step adds to
	// both the volatile and the aggregate counters.
	CorrectedECC   uint64
	UncorrectedECC uint64
}

// violationReasons are the throttle reasons that count as time held down by
// each violation policy in the double; NVML does not document the mapping.
// Reliability has none: its counter moves only when a test sets it.
var violationReasons = map[gonvml.PerfPolicyType]uint64{
	gonvml.PERF_POLICY_POWER:           gonvml.ClocksEventReasonSwPowerCap,
	gonvml.PERF_POLICY_THERMAL:         gonvml.ClocksEventReasonSwThermalSlowdown | gonvml.ClocksThrottleReasonHwThermalSlowdown,
	gonvml.PERF_POLICY_SYNC_BOOST:      gonvml.ClocksEventReasonSyncBoost,
	gonvml.PERF_POLICY_BOARD_LIMIT:     gonvml.ClocksThrottleReasonHwSlowdown | gonvml.ClocksThrottleReasonHwPowerBrakeSlowdown,
	gonvml.PERF_POLICY_LOW_UTILIZATION: gonvml.ClocksEventReasonGpuIdle,
	gonvml.PERF_POLICY_RELIABILITY:     0,
}

// series is a GPU's script and sample buffers. Guarded by GPU.mu.
type series struct {
	steps        []Step
	step         int
	clockUs      uint64 // the virtual clock, µs since the epoch, as NVML stamps samples
	gpuSamples   []gonvml.Sample
	memorySample []gonvml.Sample
}

// Now is the virtual clock. Pass it as nvml.Options.Now so samples are
// stamped with the scripted time.
func (f *Fleet) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clock
}

// Script gives GPU gpu a series of steps and puts it on the first one. It
// replaces an earlier script of that GPU; it panics without steps.
func (f *Fleet) Script(gpu int, steps ...Step) {
	if len(steps) == 0 {
		panic("nvmltest: Script needs at least one step")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.GPUs[gpu]
	g.mu.Lock()
	defer g.mu.Unlock()
	g.steps = append([]Step(nil), steps...)
	g.step = 0
	g.apply(g.steps[0], f.StepDuration)
}

// Advance moves the virtual clock one StepDuration and every scripted GPU
// to its next step (see the file comment).
func (f *Fleet) Advance() {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.StepDuration
	f.clock = f.clock.Add(d)
	for _, g := range f.GPUs {
		g.mu.Lock()
		g.clockUs = uint64(f.clock.UnixMicro())
		if len(g.steps) > 0 {
			g.step = min(g.step+1, len(g.steps)-1)
			g.apply(g.steps[g.step], d)
		}
		g.EnergyMJ += uint64(g.PowerDrawMW) * uint64(d.Microseconds()) / 1_000_000
		for policy, reasons := range violationReasons {
			if g.ThrottleReasons&reasons != 0 {
				g.ViolationNs[policy] += uint64(d.Nanoseconds())
			}
		}
		g.mu.Unlock()
	}
}

// apply makes step the GPU's state for the d up to its clock. g.mu must be
// held.
func (g *GPU) apply(step Step, d time.Duration) {
	n := uint64(len(step.UtilizationSamples))
	start := g.clockUs - uint64(d.Microseconds())
	for i, v := range step.UtilizationSamples {
		ts := start + (uint64(i)+1)*uint64(d.Microseconds())/n
		g.gpuSamples = appendSample(g.gpuSamples, ts, v)
		g.memorySample = appendSample(g.memorySample, ts, step.MemoryUtilization)
	}
	g.UtilizationGPU = 0
	if n > 0 {
		g.UtilizationGPU = step.UtilizationSamples[n-1]
	}
	g.UtilizationMemory = step.MemoryUtilization
	used := step.MemoryUsedMiB
	g.memoryUsedMiB = &used
	g.TemperatureC = step.TemperatureC
	g.PowerDrawMW = step.PowerDrawMW
	g.GraphicsClockMHz, g.SMClockMHz = step.SMClockMHz, step.SMClockMHz
	g.MemoryClockMHz = step.MemoryClockMHz
	g.ThrottleReasons = step.ThrottleReasons
	g.PCIeTxKBps, g.PCIeRxKBps = step.PCIeTxKBps, step.PCIeRxKBps
	g.Processes = append([]gonvml.ProcessInfo(nil), step.Processes...)
	g.CorrectedVolatileECC += step.CorrectedECC
	g.CorrectedAggregateECC += step.CorrectedECC
	g.VolatileECC += step.UncorrectedECC
	g.AggregateECC += step.UncorrectedECC
}

// appendSample adds one sample of an unsigned int (NVML's
// NVML_VALUE_TYPE_UNSIGNED_INT, how utilization samples come) to a buffer.
func appendSample(buffer []gonvml.Sample, ts uint64, value uint32) []gonvml.Sample {
	s := gonvml.Sample{TimeStamp: ts}
	putUint32(&s.SampleValue, value)
	buffer = append(buffer, s)
	if len(buffer) > sampleBufferLen {
		buffer = append(buffer[:0:0], buffer[len(buffer)-sampleBufferLen:]...)
	}
	return buffer
}

// samplesAfter answers nvmlDeviceGetSamples: the samples newer than
// lastSeen, or ERROR_NOT_FOUND when there are none. g.mu must be held.
func (g *GPU) samplesAfter(kind gonvml.SamplingType, lastSeen uint64) (gonvml.ValueType, []gonvml.Sample, gonvml.Return) {
	var buffer []gonvml.Sample
	switch kind {
	case gonvml.GPU_UTILIZATION_SAMPLES:
		buffer = g.gpuSamples
	case gonvml.MEMORY_UTILIZATION_SAMPLES:
		buffer = g.memorySample
	default:
		return 0, nil, gonvml.ERROR_NOT_SUPPORTED
	}
	var out []gonvml.Sample
	for _, s := range buffer {
		if s.TimeStamp > lastSeen {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return gonvml.VALUE_TYPE_UNSIGNED_INT, nil, gonvml.ERROR_NOT_FOUND
	}
	return gonvml.VALUE_TYPE_UNSIGNED_INT, out, gonvml.SUCCESS
}
