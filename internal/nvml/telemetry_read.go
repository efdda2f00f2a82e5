package nvml

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns how Sample reads one GPU (telemetryReader, with the same
// rules as Snapshot's deviceReader: a reading the GPU does not give is nil;
// ERROR_GPU_IS_LOST, ERROR_RESET_REQUIRED or ERROR_UNINITIALIZED stop the
// GPU's reading and are recorded on it) and its gauges: identity, MIG mode,
// memory, temperatures, power and energy, clocks, throttle reasons, PCIe.
// Units are NVML's (nvml.h) unless converted where read: memory in bytes
// becomes MiB, power in milliwatts becomes watts.

// telemetryReader reads one GPU for one Sample.
type telemetryReader struct {
	lib     gonvml.Interface
	dev     gonvml.Device
	state   *gpuTelemetry
	out     *GPUSample
	names   *processNames
	stopped bool

	// processes is the GPU's raw process list, kept for the MIG devices
	// listed without handles.
	processes []gonvml.ProcessInfo
}

// ask calls one NVML reading of this GPU, unless the GPU already answered
// ERROR_NOT_SUPPORTED or ERROR_FUNCTION_NOT_FOUND to it; then that answer
// is returned without a call. A code that means the GPU is unusable stops
// the reader.
func ask[T any](r *telemetryReader, what string, f func() (T, gonvml.Return)) (T, gonvml.Return) {
	if ret, known := r.state.unsupported[what]; known {
		var zero T
		return zero, ret
	}
	v, ret := call1(f)
	switch {
	case ret == gonvml.ERROR_NOT_SUPPORTED || ret == gonvml.ERROR_FUNCTION_NOT_FOUND:
		r.state.unsupported[what] = ret
	case deviceFatal(ret):
		r.stop(what, ret)
	}
	return v, ret
}

// read is ask returning a pointer to the value, nil when there is none.
func read[T any](r *telemetryReader, what string, f func() (T, gonvml.Return)) *T {
	v, ret := ask(r, what, f)
	if ret != gonvml.SUCCESS {
		return nil
	}
	return &v
}

func (r *telemetryReader) stop(what string, ret gonvml.Return) {
	if r.stopped {
		return
	}
	r.stopped = true
	r.out.Lost = ret == gonvml.ERROR_GPU_IS_LOST
	r.out.Error = fmt.Sprintf("reading %s: %v", what, ret)
}

// readIdentity fills UUID, name and bus id; the last two are read once per
// GPU. Like Snapshot, a failure other than "not supported" stops the GPU.
func (r *telemetryReader) readIdentity() {
	st := r.state
	r.out.UUID = st.uuid
	if st.busID == "" {
		pci, ret := call1(r.dev.GetPciInfo)
		switch {
		case ret == gonvml.SUCCESS:
			st.busID = busIDFromPCIInfo(pci)
		case !unreported(ret):
			r.stop("PCI info", ret)
			return
		}
	}
	if st.name == "" {
		name, ret := call1(r.dev.GetName)
		switch {
		case ret == gonvml.SUCCESS:
			st.name = name
		case !unreported(ret):
			r.stop("name", ret)
			return
		}
	}
	r.out.Name, r.out.PCIBusID = st.name, st.busID
}

// readMIGMode notes whether MIG is on before anything else is read, since
// MIG mode decides what NVML supports.
func (r *telemetryReader) readMIGMode() {
	type modes struct{ current, pending int }
	m, ret := ask(r, "MIG mode", func() (modes, gonvml.Return) {
		current, pending, ret := r.dev.GetMigMode()
		return modes{current, pending}, ret
	})
	r.state.noteMIGMode(ret == gonvml.SUCCESS && m.current == gonvml.DEVICE_MIG_ENABLE)
}

func (r *telemetryReader) readMemory() {
	if mem := read(r, "memory", r.dev.GetMemoryInfo); mem != nil {
		total, used, free := mem.Total/mib, mem.Used/mib, mem.Free/mib
		r.out.MemoryTotalMiB, r.out.MemoryUsedMiB, r.out.MemoryFreeMiB = &total, &used, &free
	}
}

// readTemperatures reads the GPU's temperature and, through a field value
// (NVML has no other call for it), its memory's: NVML_FI_DEV_MEMORY_TEMP,
// in °C, offered by HBM GPUs.
func (r *telemetryReader) readTemperatures() {
	r.out.TemperatureC = read(r, "temperature", func() (uint32, gonvml.Return) {
		return r.dev.GetTemperature(gonvml.TEMPERATURE_GPU)
	})
	if r.stopped {
		return
	}
	field, ret := ask(r, "memory temperature", func() (gonvml.FieldValue, gonvml.Return) {
		values := []gonvml.FieldValue{{FieldId: gonvml.FI_DEV_MEMORY_TEMP}}
		if ret := r.dev.GetFieldValues(values); ret != gonvml.SUCCESS {
			return gonvml.FieldValue{}, ret
		}
		// The call succeeds when any field was filled; each field says
		// for itself (nvmlFieldValue_t.nvmlReturn).
		return values[0], gonvml.Return(values[0].NvmlReturn)
	})
	if ret != gonvml.SUCCESS {
		return
	}
	if c, ok := decodeValue(gonvml.ValueType(field.ValueType), field.Value); ok && c >= 0 {
		celsius := uint32(c)
		r.out.MemoryTemperatureC = &celsius
	}
}

// readPower reads the draw and the enforced limit (milliwatts, turned into
// watts) and the energy counter (millijoules since the driver was loaded).
func (r *telemetryReader) readPower() {
	if mw := read(r, "power draw", r.dev.GetPowerUsage); mw != nil {
		r.out.PowerDrawW = watts(*mw)
	}
	if r.stopped {
		return
	}
	if mw := read(r, "enforced power limit", r.dev.GetEnforcedPowerLimit); mw != nil {
		r.out.PowerLimitW = watts(*mw)
	}
	if r.stopped {
		return
	}
	r.out.EnergyMilliJoules = read(r, "energy", r.dev.GetTotalEnergyConsumption)
}

func (r *telemetryReader) readClocks() {
	clocks := []struct {
		what string
		kind gonvml.ClockType
		out  **uint32
	}{
		{"graphics clock", gonvml.CLOCK_GRAPHICS, &r.out.GraphicsClockMHz},
		{"SM clock", gonvml.CLOCK_SM, &r.out.SMClockMHz},
		{"memory clock", gonvml.CLOCK_MEM, &r.out.MemoryClockMHz},
	}
	for _, c := range clocks {
		if r.stopped {
			return
		}
		*c.out = read(r, c.what, func() (uint32, gonvml.Return) { return r.dev.GetClockInfo(c.kind) })
	}
}

// readThrottleReasons reads nvmlDeviceGetCurrentClocksEventReasons, or its
// older name nvmlDeviceGetCurrentClocksThrottleReasons (deprecated in
// nvml.h) where the installed NVML predates the rename; both return the
// same nvmlClocksEventReason* bit mask.
func (r *telemetryReader) readThrottleReasons() {
	mask, ret := ask(r, "clocks event reasons", r.dev.GetCurrentClocksEventReasons)
	if ret == gonvml.ERROR_FUNCTION_NOT_FOUND {
		mask, ret = ask(r, "clocks throttle reasons", r.dev.GetCurrentClocksThrottleReasons)
	}
	if ret == gonvml.SUCCESS {
		r.out.ThrottleReasons = &mask
	}
}

// readPCIe reads PCIe throughput in KB/s (NVML samples it over 20 ms) and
// the replay counter, a running total.
func (r *telemetryReader) readPCIe() {
	r.out.PCIeTxKBps = read(r, "PCIe TX throughput", func() (uint32, gonvml.Return) {
		return r.dev.GetPcieThroughput(gonvml.PCIE_UTIL_TX_BYTES)
	})
	if r.stopped {
		return
	}
	r.out.PCIeRxKBps = read(r, "PCIe RX throughput", func() (uint32, gonvml.Return) {
		return r.dev.GetPcieThroughput(gonvml.PCIE_UTIL_RX_BYTES)
	})
	if r.stopped {
		return
	}
	r.out.PCIeReplays = read(r, "PCIe replay counter", func() (uint64, gonvml.Return) {
		n, ret := r.dev.GetPcieReplayCounter()
		return uint64(n), ret
	})
}
