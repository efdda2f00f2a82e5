package nvml

import (
	"sort"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns the readings Snapshot and Sample both take of a GPU, each
// one NVML call under one name (the name an error and the list of
// unsupported readings use). Units are NVML's (nvml.h) unless converted
// here: memory in bytes becomes MiB where stored, power in milliwatts
// becomes watts.

const mib = 1024 * 1024

func watts(milliwatts uint32) *float64 {
	w := float64(milliwatts) / 1000
	return &w
}

// memoryInfo is a GPU's framebuffer memory in bytes. reserved is what the
// driver keeps for itself (nvmlMemory_v2_t.reserved), nil where only v1
// answered: v1 has no such figure, its used includes the reserve.
type memoryInfo struct {
	gonvml.Memory
	reserved *uint64
}

// memory is nvmlDeviceGetMemoryInfo_v2 where the driver has it, whose
// used memory leaves out what the driver reserves for itself, as
// nvidia-smi's memory.used does; nvmlDeviceGetMemoryInfo (v1), for drivers
// without v2, counts the reserve as used. On an idle H100 with driver
// 580.159.04, v1 said 480 MiB used where nvidia-smi said 0 MiB. Free memory
// is the same in both.
func (r *gpuReader) memory() *memoryInfo {
	if v2 := read(r, "memory (v2)", r.dev.GetMemoryInfo_v2); v2 != nil {
		return &memoryInfo{Memory: gonvml.Memory{Total: v2.Total, Free: v2.Free, Used: v2.Used}, reserved: &v2.Reserved}
	}
	if v1 := read(r, "memory", r.dev.GetMemoryInfo); v1 != nil {
		return &memoryInfo{Memory: *v1}
	}
	return nil
}

// reservedMiB is mem's reserve in MiB, nil where the driver gave none.
func (mem *memoryInfo) reservedMiB() *uint64 {
	if mem.reserved == nil {
		return nil
	}
	v := *mem.reserved / mib
	return &v
}

// utilizationRates is nvmlDeviceGetUtilizationRates: GPU and memory
// utilization over the last sample period.
func (r *gpuReader) utilizationRates() *gonvml.Utilization {
	return read(r, "utilization", r.dev.GetUtilizationRates)
}

func (r *gpuReader) temperature() *uint32 {
	return read(r, "temperature", func() (uint32, gonvml.Return) {
		return r.dev.GetTemperature(gonvml.TEMPERATURE_GPU)
	})
}

func (r *gpuReader) powerDraw() *float64 {
	if mw := read(r, "power draw", r.dev.GetPowerUsage); mw != nil {
		return watts(*mw)
	}
	return nil
}

// clockNames name the current clocks a GPU reports.
var clockNames = map[gonvml.ClockType]string{
	gonvml.CLOCK_GRAPHICS: "graphics clock",
	gonvml.CLOCK_SM:       "SM clock",
	gonvml.CLOCK_MEM:      "memory clock",
}

// clock is a current clock in MHz.
func (r *gpuReader) clock(kind gonvml.ClockType) *uint32 {
	return read(r, clockNames[kind], func() (uint32, gonvml.Return) { return r.dev.GetClockInfo(kind) })
}

// eccCounterNames name the ECC error counters.
var eccCounterNames = map[gonvml.EccCounterType]map[gonvml.MemoryErrorType]string{
	gonvml.VOLATILE_ECC: {
		gonvml.MEMORY_ERROR_TYPE_CORRECTED:   "volatile corrected ECC errors",
		gonvml.MEMORY_ERROR_TYPE_UNCORRECTED: "volatile uncorrected ECC errors",
	},
	gonvml.AGGREGATE_ECC: {
		gonvml.MEMORY_ERROR_TYPE_CORRECTED:   "aggregate corrected ECC errors",
		gonvml.MEMORY_ERROR_TYPE_UNCORRECTED: "aggregate uncorrected ECC errors",
	},
}

// eccErrors is an ECC error count: volatile since the driver was loaded,
// aggregate over the GPU's lifetime.
func (r *gpuReader) eccErrors(kind gonvml.MemoryErrorType, counter gonvml.EccCounterType) *uint64 {
	return read(r, eccCounterNames[counter][kind], func() (uint64, gonvml.Return) {
		return r.dev.GetTotalEccErrors(kind, counter)
	})
}

// retiredPagesPending says a reset is needed to retire pages (before
// Ampere; NVML answers ERROR_NOT_SUPPORTED on Ampere and later).
func (r *gpuReader) retiredPagesPending() *bool {
	state := read(r, "retired pages pending", r.dev.GetRetiredPagesPendingStatus)
	if state == nil {
		return nil
	}
	pending := *state == gonvml.FEATURE_ENABLED
	return &pending
}

// remappedRows is nvmlDeviceGetRemappedRows (Ampere and later).
type remappedRows struct {
	correctable, uncorrectable int
	pending, failure           bool
}

func (r *gpuReader) remappedRows() *remappedRows {
	return read(r, "remapped rows", func() (remappedRows, gonvml.Return) {
		corr, unc, pending, failure, ret := r.dev.GetRemappedRows()
		return remappedRows{corr, unc, pending, failure}, ret
	})
}

// processes is the GPU's compute process list as NVML gives it; ok is
// false when there is none.
func (r *gpuReader) processes() (infos []gonvml.ProcessInfo, ok bool) {
	infos, ret := ask(r, "processes", r.dev.GetComputeRunningProcesses)
	return infos, ret == gonvml.SUCCESS
}

// migModes is a GPU's MIG mode now and after its next reset.
type migModes struct{ current, pending bool }

// migMode reads the MIG mode, noting it in what is kept about the GPU
// (which forgets the readings the GPU did not support when the mode
// changed), so it comes before the readings MIG mode decides. ok is false
// on a GPU without MIG.
func (r *gpuReader) migMode() (m migModes, ok bool) {
	m, ret := ask(r, "MIG mode", func() (migModes, gonvml.Return) {
		current, pending, ret := r.dev.GetMigMode()
		return migModes{current == gonvml.DEVICE_MIG_ENABLE, pending == gonvml.DEVICE_MIG_ENABLE}, ret
	})
	if r.state != nil && !r.stopped {
		r.state.noteMIGMode(ret == gonvml.SUCCESS && m.current)
	}
	return m, ret == gonvml.SUCCESS
}

// migDevices lists the GPU's MIG devices, ordered by GPU instance, then
// compute instance: through MIG device handles where NVML offers them, as
// `nvidia-smi -L` does, which needs no privilege, each with its handle and
// its memory reading; otherwise by walking the GPU and compute instances
// (privileged; what mig-parted does), without handles, memory in use or
// UUIDs. totalBytes is the GPU's memory, which names the profiles.
func (r *gpuReader) migDevices(totalBytes uint64) []migHandle {
	if r.stopped {
		return nil
	}
	handles, ok, fatal := migHandles(r.dev, totalBytes)
	if !ok && fatal == gonvml.SUCCESS {
		var devices []MIGDevice
		devices, fatal = migDevicesByInstance(r.dev, totalBytes)
		for _, d := range devices {
			handles = append(handles, migHandle{MIGDevice: d})
		}
	}
	if fatal != gonvml.SUCCESS {
		r.stop("MIG devices", fatal)
		return nil
	}
	sort.Slice(handles, func(i, j int) bool { return migLess(handles[i].MIGDevice, handles[j].MIGDevice) })
	return handles
}
