package nvml

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns how one GPU is read, for Snapshot and Sample alike: one
// reader per GPU per pass, and the rules every reading of it follows.
// Snapshot and Sample differ only in their field sets, the readings they
// ask the reader for (device_read.go, and telemetry_read.go with its
// sibling files); the readings both ask for are in gpu_readings.go.
//
// The rules:
//   - A reading the GPU does not give (not supported, no permission, not
//     in this NVML library) leaves its field nil.
//   - A reading the GPU answered ERROR_NOT_SUPPORTED or
//     ERROR_FUNCTION_NOT_FOUND to is not asked again while NVML stays
//     initialized (gpu_state.go); a change of MIG mode forgets that list.
//   - An identity reading (PCI info, UUID, name) that fails for any other
//     reason stops the reader: a GPU that cannot say who it is is not read.
//   - An answer that means the GPU itself is unusable (ERROR_GPU_IS_LOST,
//     ERROR_RESET_REQUIRED, ERROR_UNINITIALIZED) stops the reader: no
//     further NVML call is made on the GPU, or its MIG devices, in this
//     pass. The failure is recorded on the GPU (Lost, Error) with what was
//     read before it.

// gpuReader reads one GPU for one Snapshot or Sample.
type gpuReader struct {
	dev gonvml.Device
	// state is what is remembered about the GPU between passes; nil until
	// its UUID is known, and then nothing is remembered.
	state *gpuState
	names *processNames // shared by the GPUs of one pass

	stopped bool
	fault   gonvml.Return // the answer that stopped the reader
	failure string        // "reading UUID: ERROR_GPU_IS_LOST"
}

// run calls the readings of a field set in order, until one stops the
// reader.
func (r *gpuReader) run(readings ...func()) {
	for _, read := range readings {
		if r.stopped {
			return
		}
		read()
	}
}

// lost says the reader stopped because the GPU fell off the bus.
func (r *gpuReader) lost() bool {
	return r.fault == gonvml.ERROR_GPU_IS_LOST
}

func (r *gpuReader) stop(what string, ret gonvml.Return) {
	if r.stopped {
		return
	}
	r.stopped, r.fault = true, ret
	r.failure = fmt.Sprintf("reading %s: %v", what, ret)
}

// call makes one NVML call on the GPU, unless the reader has stopped (then
// it answers what stopped it), and stops the reader on an answer that
// means the GPU is unusable.
func call[T any](r *gpuReader, what string, f func() (T, gonvml.Return)) (T, gonvml.Return) {
	if r.stopped {
		var zero T
		return zero, r.fault
	}
	v, ret := call1(f)
	if deviceFatal(ret) {
		r.stop(what, ret)
	}
	return v, ret
}

// ask is call for a reading the GPU may not support: once the GPU answered
// ERROR_NOT_SUPPORTED or ERROR_FUNCTION_NOT_FOUND to it, that answer is
// returned without a call.
func ask[T any](r *gpuReader, what string, f func() (T, gonvml.Return)) (T, gonvml.Return) {
	if r.state != nil {
		if ret, known := r.state.unsupported[what]; known {
			var zero T
			return zero, ret
		}
	}
	v, ret := call(r, what, f)
	if r.state != nil && (ret == gonvml.ERROR_NOT_SUPPORTED || ret == gonvml.ERROR_FUNCTION_NOT_FOUND) {
		r.state.unsupported[what] = ret
	}
	return v, ret
}

// read is ask returning a pointer to the value, nil when there is none.
func read[T any](r *gpuReader, what string, f func() (T, gonvml.Return)) *T {
	v, ret := ask(r, what, f)
	if ret != gonvml.SUCCESS {
		return nil
	}
	return &v
}

// twoValues are the values of an NVML call that gives two.
type twoValues[A, B any] struct {
	first  A
	second B
}

// read2 is read for a call that gives two values.
func read2[A, B any](r *gpuReader, what string, f func() (A, B, gonvml.Return)) *twoValues[A, B] {
	return read(r, what, func() (twoValues[A, B], gonvml.Return) {
		a, b, ret := f()
		return twoValues[A, B]{a, b}, ret
	})
}

// identify reads one identity of the GPU; ok is false when there is none.
// A failure other than "not supported" or "no permission" stops the
// reader.
func identify[T any](r *gpuReader, what string, f func() (T, gonvml.Return)) (v T, ok bool) {
	v, ret := call(r, what, f)
	if ret != gonvml.SUCCESS && !unreported(ret) {
		r.stop(what, ret)
	}
	return v, ret == gonvml.SUCCESS
}
