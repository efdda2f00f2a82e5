package nvml

import (
	"encoding/binary"
	"math"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns utilization in a Sample. The driver keeps a buffer of
// recent samples per kind (nvmlDeviceGetSamples: NVML_GPU_UTILIZATION_SAMPLES
// and NVML_MEMORY_UTILIZATION_SAMPLES, each a percentage taken every 1/6 s to
// 1 s depending on the GPU, stamped with a CPU timestamp in µs). Sample
// averages the samples it has not seen yet, so a 1 s monitor interval
// reflects the whole second, not the last sample period:
//
//   - Each GPU remembers the newest timestamp it has averaged, per buffer,
//     and asks NVML only for newer samples (lastSeenTimeStamp). Samples at
//     or before that timestamp are dropped even if NVML returns them.
//   - The first Sample of a GPU has no such timestamp: it averages the
//     samples of the second up to the newest one (timestamp > newest - 1 s),
//     as a first `nvidia-smi dmon` line would.
//   - The mean is rounded to the nearest percent, halves up: samples 0, 100,
//     100, 100, 0, 100 give 67.
//   - When a buffer has nothing new (NVML says ERROR_NOT_FOUND: the driver
//     stops filling it while the GPU idles), is not supported (MIG mode), or
//     the binding lacks the call, the value is nvmlDeviceGetUtilizationRates'
//     reading of the last sample period instead, and the remembered
//     timestamp stays where it was (the two readings do not share a clock).
//
// UtilizationAveraged says UtilizationGPU came from the buffer.

// firstSampleWindowUs is how far back (µs) from the newest buffered sample
// the first Sample of a GPU averages.
const firstSampleWindowUs = 1_000_000

func (f *sampleFields) readUtilization() {
	gpu, gpuOK := f.bufferMean("GPU utilization samples", gonvml.GPU_UTILIZATION_SAMPLES)
	memory, memoryOK := f.bufferMean("memory utilization samples", gonvml.MEMORY_UTILIZATION_SAMPLES)
	if gpuOK {
		f.out.UtilizationGPU, f.out.UtilizationAveraged = &gpu, true
	}
	if memoryOK {
		f.out.UtilizationMemory = &memory
	}
	if !gpuOK || !memoryOK {
		if u := f.utilizationRates(); u != nil {
			if !gpuOK {
				f.out.UtilizationGPU = &u.Gpu
			}
			if !memoryOK {
				f.out.UtilizationMemory = &u.Memory
			}
		}
	}
	// Each engine's reading is the percentage and its sampling period (µs).
	if e := read2(f.gpuReader, "encoder utilization", f.dev.GetEncoderUtilization); e != nil {
		f.out.UtilizationEncoder = &e.first
	}
	if e := read2(f.gpuReader, "decoder utilization", f.dev.GetDecoderUtilization); e != nil {
		f.out.UtilizationDecoder = &e.first
	}
}

// bufferMean averages the samples of one buffer newer than the last ones
// this GPU averaged (see the file comment). ok is false when there are none.
func (f *sampleFields) bufferMean(what string, kind gonvml.SamplingType) (percent uint32, ok bool) {
	type buffer struct {
		valueType gonvml.ValueType
		samples   []gonvml.Sample
	}
	lastSeen := f.state.lastSeen[kind]
	b, ret := ask(f.gpuReader, what, func() (buffer, gonvml.Return) {
		valueType, samples, ret := f.dev.GetSamples(kind, lastSeen)
		return buffer{valueType, samples}, ret
	})
	if ret != gonvml.SUCCESS {
		return 0, false // ERROR_NOT_FOUND: nothing new
	}
	var newest uint64
	for _, s := range b.samples {
		newest = max(newest, s.TimeStamp)
	}
	if newest <= lastSeen {
		return 0, false
	}
	after := lastSeen
	if lastSeen == 0 && newest > firstSampleWindowUs {
		after = newest - firstSampleWindowUs
	}
	var sum float64
	var n int
	for _, s := range b.samples {
		if s.TimeStamp <= after {
			continue
		}
		v, ok := decodeValue(b.valueType, s.SampleValue)
		if !ok {
			return 0, false
		}
		sum += v
		n++
	}
	f.state.lastSeen[kind] = newest
	mean := math.Round(sum / float64(n)) // n > 0: the newest sample is always counted
	return uint32(max(0, min(mean, 100))), true
}

// decodeValue reads nvmlValue_t, a C union, as the value type NVML says it
// holds. The union's bytes are in the machine's byte order; unsigned long
// is 64 bits on the Linux targets gpu-bootstrap is built for.
func decodeValue(t gonvml.ValueType, v [8]byte) (float64, bool) {
	order := binary.NativeEndian
	switch t {
	case gonvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(order.Uint64(v[:])), true
	case gonvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(order.Uint32(v[:4])), true
	case gonvml.VALUE_TYPE_UNSIGNED_LONG, gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(order.Uint64(v[:])), true
	case gonvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(order.Uint64(v[:]))), true
	case gonvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(order.Uint32(v[:4]))), true
	case gonvml.VALUE_TYPE_UNSIGNED_SHORT:
		return float64(order.Uint16(v[:2])), true
	}
	return 0, false
}
