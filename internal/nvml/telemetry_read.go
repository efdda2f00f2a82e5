package nvml

import (
	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns Sample's field set: what Sample reads of one GPU into a
// GPUSample, through the GPU's reader (gpu_reader.go) and so by its rules.
// Here are its identity and gauges: MIG mode, memory, temperatures, power
// and energy, clocks, throttle reasons, PCIe; utilization, the counters and
// what runs on the GPU have files of their own (telemetry_utilization.go,
// telemetry_counters.go, telemetry_processes.go).

// sampleFields reads one GPU into a GPUSample.
type sampleFields struct {
	*gpuReader
	out *GPUSample

	// rawProcesses is the GPU's process list as NVML gave it, kept for the
	// MIG devices listed without handles.
	rawProcesses []gonvml.ProcessInfo
}

// readSample reads the GPU dev into out, whose Index is set. state is what
// is kept between calls; names looks process names up.
func readSample(dev gonvml.Device, state *readState, names *processNames, out *GPUSample) {
	f := &sampleFields{gpuReader: &gpuReader{dev: dev, names: names}, out: out}
	f.readIdentity(state)
	f.run(
		f.readMIGMode,
		f.readUtilization,
		f.readMemory,
		f.readTemperatures,
		f.readPower,
		f.readClocks,
		f.readThrottleReasons,
		f.readPCIe,
		f.readECC,
		f.readRetirement,
		f.readViolations,
		f.readNVLinkErrors,
		f.readProcesses,
		f.readMIG,
	)
	out.Lost, out.Error = f.lost(), f.failure
}

// readIdentity reads the UUID, which says what is kept about the GPU, and
// fills the name and bus id, read once per GPU. Like Snapshot, a failure
// other than "not supported" stops the GPU; so does any failure to give
// the UUID.
func (f *sampleFields) readIdentity(state *readState) {
	uuid, ret := call(f.gpuReader, "UUID", f.dev.GetUUID)
	if ret != gonvml.SUCCESS {
		f.stop("UUID", ret)
		return
	}
	st := state.gpu(f.out.Index, uuid)
	f.state = st
	f.out.UUID = uuid
	if st.busID == "" {
		if pci, ok := identify(f.gpuReader, "PCI info", f.dev.GetPciInfo); ok {
			st.busID = busIDFromPCIInfo(pci)
		}
	}
	if st.name == "" {
		if name, ok := identify(f.gpuReader, "name", f.dev.GetName); ok {
			st.name = name
		}
	}
	if !f.stopped {
		f.out.Name, f.out.PCIBusID = st.name, st.busID
	}
}

// readMIGMode notes whether MIG is on before anything else is read, since
// MIG mode decides what NVML supports.
func (f *sampleFields) readMIGMode() {
	f.migMode()
}

func (f *sampleFields) readMemory() {
	if mem := f.memory(); mem != nil {
		total, used, free := mem.Total/mib, mem.Used/mib, mem.Free/mib
		f.out.MemoryTotalMiB, f.out.MemoryUsedMiB, f.out.MemoryFreeMiB = &total, &used, &free
		f.out.MemoryReservedMiB = mem.reservedMiB()
	}
}

// readTemperatures reads the GPU's temperature and, through a field value
// (NVML has no other call for it), its memory's: NVML_FI_DEV_MEMORY_TEMP,
// in °C, offered by HBM GPUs.
func (f *sampleFields) readTemperatures() {
	f.out.TemperatureC = f.temperature()
	field := read(f.gpuReader, "memory temperature", func() (gonvml.FieldValue, gonvml.Return) {
		values := []gonvml.FieldValue{{FieldId: gonvml.FI_DEV_MEMORY_TEMP}}
		if ret := f.dev.GetFieldValues(values); ret != gonvml.SUCCESS {
			return gonvml.FieldValue{}, ret
		}
		// The call succeeds when any field was filled; each field says
		// for itself (nvmlFieldValue_t.nvmlReturn).
		return values[0], gonvml.Return(values[0].NvmlReturn)
	})
	if field == nil {
		return
	}
	if c, ok := decodeValue(gonvml.ValueType(field.ValueType), field.Value); ok && c >= 0 {
		celsius := uint32(c)
		f.out.MemoryTemperatureC = &celsius
	}
}

// readPower reads the draw and the enforced limit (watts) and the energy
// counter (millijoules since the driver was loaded).
func (f *sampleFields) readPower() {
	f.out.PowerDrawW = f.powerDraw()
	if mw := read(f.gpuReader, "enforced power limit", f.dev.GetEnforcedPowerLimit); mw != nil {
		f.out.PowerLimitW = watts(*mw)
	}
	f.out.EnergyMilliJoules = read(f.gpuReader, "energy", f.dev.GetTotalEnergyConsumption)
}

func (f *sampleFields) readClocks() {
	f.out.GraphicsClockMHz = f.clock(gonvml.CLOCK_GRAPHICS)
	f.out.SMClockMHz = f.clock(gonvml.CLOCK_SM)
	f.out.MemoryClockMHz = f.clock(gonvml.CLOCK_MEM)
}

// readThrottleReasons reads nvmlDeviceGetCurrentClocksEventReasons, or its
// older name nvmlDeviceGetCurrentClocksThrottleReasons (deprecated in
// nvml.h) where the installed NVML predates the rename; both return the
// same nvmlClocksEventReason* bit mask.
func (f *sampleFields) readThrottleReasons() {
	mask, ret := ask(f.gpuReader, "clocks event reasons", f.dev.GetCurrentClocksEventReasons)
	if ret == gonvml.ERROR_FUNCTION_NOT_FOUND {
		mask, ret = ask(f.gpuReader, "clocks throttle reasons", f.dev.GetCurrentClocksThrottleReasons)
	}
	if ret == gonvml.SUCCESS {
		f.out.ThrottleReasons = &mask
	}
}

// readPCIe reads PCIe throughput in KB/s (NVML samples it over 20 ms) and
// the replay counter, a running total.
func (f *sampleFields) readPCIe() {
	f.out.PCIeTxKBps = read(f.gpuReader, "PCIe TX throughput", func() (uint32, gonvml.Return) {
		return f.dev.GetPcieThroughput(gonvml.PCIE_UTIL_TX_BYTES)
	})
	f.out.PCIeRxKBps = read(f.gpuReader, "PCIe RX throughput", func() (uint32, gonvml.Return) {
		return f.dev.GetPcieThroughput(gonvml.PCIE_UTIL_RX_BYTES)
	})
	f.out.PCIeReplays = read(f.gpuReader, "PCIe replay counter", func() (uint64, gonvml.Return) {
		n, ret := f.dev.GetPcieReplayCounter()
		return uint64(n), ret
	})
}
