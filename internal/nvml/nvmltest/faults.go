package nvmltest

import (
	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns the faults a health test plays on the fleet beyond an
// event (events.go): a GPU falling off the bus and coming back after a
// reset, a machine that enumerates fewer GPUs than it has, and a driver
// that is not loaded.

// LoseGPU makes GPU i fall off the bus: every call on it answers
// ERROR_GPU_IS_LOST (as after XID 79) until RecoverGPU. It fires no event;
// FireXID(i, 79) does that where a test wants the event too.
func (f *Fleet) LoseGPU(i int) {
	gpu := f.GPUs[i]
	gpu.mu.Lock()
	defer gpu.mu.Unlock()
	gpu.Lost = true
}

// RecoverGPU plays a reset of GPU i (nvidia-smi -r, or the driver reloaded
// for it): the GPU answers again, and what NVML keeps "since the driver
// loaded" starts over: the volatile ECC counts (nvml.h,
// nvmlEccCounterType_t: "Volatile counts are reset each time the driver
// loads") and the energy counter (nvmlDeviceGetTotalEnergyConsumption:
// "since the driver was last reloaded") are 0. A row remap that was pending
// is applied at the reset (nvmlDeviceGetRemappedRows: pending "remapping
// ... requires a GPU reset"): pending clears and the remapped row counts
// stay. Aggregate counters, a remap failure (no spare row left) and
// the PCIe replay counter are kept.
func (f *Fleet) RecoverGPU(i int) {
	gpu := f.GPUs[i]
	gpu.mu.Lock()
	defer gpu.mu.Unlock()
	gpu.Lost = false
	gpu.VolatileECC = 0
	gpu.CorrectedVolatileECC = 0
	gpu.EnergyMJ = 0
	gpu.RemapPending = false
}

// AddECCErrors adds corrected (single-bit) and uncorrected (double-bit)
// errors to GPU i's volatile and aggregate ECC counters, as the driver
// counts them. It fires no event; FireEvent with
// EventTypeDoubleBitEccError does that where a test wants one.
func (f *Fleet) AddECCErrors(i int, corrected, uncorrected uint64) {
	gpu := f.GPUs[i]
	gpu.mu.Lock()
	defer gpu.mu.Unlock()
	gpu.CorrectedVolatileECC += corrected
	gpu.CorrectedAggregateECC += corrected
	gpu.VolatileECC += uncorrected
	gpu.AggregateECC += uncorrected
}

// SetRowRemapping sets GPU i's row-remapping state
// (nvmlDeviceGetRemappedRows): a remap waiting for the next reset, and a
// remap that failed because no spare row was left.
func (f *Fleet) SetRowRemapping(i int, pending, failure bool) {
	gpu := f.GPUs[i]
	gpu.mu.Lock()
	defer gpu.mu.Unlock()
	gpu.RemapPending, gpu.RemapFailure = pending, failure
}

// AddPCIeReplays adds n to GPU i's PCIe replay counter.
func (f *Fleet) AddPCIeReplays(i int, n uint64) {
	gpu := f.GPUs[i]
	gpu.mu.Lock()
	defer gpu.mu.Unlock()
	gpu.PCIeReplays += n
}

// AddNVLinkCRCErrors adds n to the CRC flit error counter of GPU i's
// NVLink link (ConnectNVLink made it).
func (f *Fleet) AddNVLinkCRCErrors(i, link int, n uint64) {
	gpu := f.GPUs[i]
	gpu.mu.Lock()
	defer gpu.mu.Unlock()
	gpu.NVLinks[link].CRCFlit += n
}

// SetDriverLoaded loads or unloads the fleet's driver: while it is not
// loaded, nvmlInit answers ERROR_DRIVER_NOT_LOADED (the kernel module is
// missing), so a caller that initializes NVML again finds the driver once
// it is loaded. It changes nothing for a caller whose NVML is already
// initialized.
func (f *Fleet) SetDriverLoaded(loaded bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.driverUnloaded = !loaded
}

// NewDGXA100WithGPUs returns NewDGXA100's machine with only its first n
// GPUs (0 < n <= 8) enumerated, as on a node where some GPUs did not come
// up: nvmlDeviceGetCount answers n, and a handle of a GPU beyond them is
// ERROR_INVALID_ARGUMENT by index and ERROR_NOT_FOUND by UUID or bus ID.
// Fleet.GPUs still holds eight; the hidden ones are never read.
func NewDGXA100WithGPUs(n int) *Fleet {
	if n <= 0 || n > len(dgxBusNumbers) {
		panic("nvmltest.NewDGXA100WithGPUs: n must be 1 to 8")
	}
	return newDGXA100(n)
}

// wireVisibleGPUs limits the GPUs the library enumerates to the first n.
func (f *Fleet) wireVisibleGPUs(n int) {
	s := f.Server
	if n == len(s.Devices) {
		return
	}
	byIndex, byUUID, byBusID := s.DeviceGetHandleByIndexFunc, s.DeviceGetHandleByUUIDFunc, s.DeviceGetHandleByPciBusIdFunc
	visible := func(d gonvml.Device, ret gonvml.Return) (gonvml.Device, gonvml.Return) {
		if ret == gonvml.SUCCESS && Mock(d).Index >= n {
			return nil, gonvml.ERROR_NOT_FOUND
		}
		return d, ret
	}
	s.DeviceGetCountFunc = func() (int, gonvml.Return) { return n, gonvml.SUCCESS }
	s.DeviceGetHandleByIndexFunc = func(index int) (gonvml.Device, gonvml.Return) {
		if index >= n {
			return nil, gonvml.ERROR_INVALID_ARGUMENT
		}
		return byIndex(index)
	}
	s.DeviceGetHandleByUUIDFunc = func(uuid string) (gonvml.Device, gonvml.Return) { return visible(byUUID(uuid)) }
	s.DeviceGetHandleByPciBusIdFunc = func(busID string) (gonvml.Device, gonvml.Return) { return visible(byBusID(busID)) }
}

// wireDriver makes nvmlInit answer ERROR_DRIVER_NOT_LOADED while the driver
// is unloaded (SetDriverLoaded).
func (f *Fleet) wireDriver() {
	s := f.Server
	initLib := s.InitFunc
	s.InitFunc = func() gonvml.Return {
		f.mu.Lock()
		unloaded := f.driverUnloaded
		f.mu.Unlock()
		if unloaded {
			return gonvml.ERROR_DRIVER_NOT_LOADED
		}
		return initLib()
	}
}
