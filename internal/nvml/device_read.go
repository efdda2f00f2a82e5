package nvml

import (
	"fmt"
	"strconv"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns Snapshot's field set: what Snapshot reads of one GPU into
// a Device, through the GPU's reader (gpu_reader.go) and so by its rules;
// and how NVML's answers are spelled for a reader (bus ids, architectures,
// compute modes).

// deviceFields reads one GPU into a Device.
type deviceFields struct {
	*gpuReader
	out *Device
	mig migModes // read early, listed last
}

// readDevice reads GPU number index. state is what is kept between calls;
// names looks process names up.
func readDevice(dev gonvml.Device, index int, state *readState, names *processNames) Device {
	d := Device{Index: index, Processes: []Process{}}
	f := &deviceFields{gpuReader: &gpuReader{dev: dev, names: names}, out: &d}
	f.readIdentity(index, state)
	f.run(
		f.readMIGMode,
		f.readModel,
		f.readMemory,
		f.readUtilization,
		f.readPower,
		f.readModes,
		f.readECC,
		f.readClocks,
		f.readProcesses,
		f.readMIGDevices,
	)
	d.Lost, d.Error = f.lost(), f.failure
	return d
}

// readIdentity reads the PCI address, the UUID (from which on what is kept
// about the GPU is used) and the name.
func (f *deviceFields) readIdentity(index int, state *readState) {
	if pci, ok := identify(f.gpuReader, "PCI info", f.dev.GetPciInfo); ok {
		f.out.PCIBusID = busIDFromPCIInfo(pci)
	}
	uuid, ok := identify(f.gpuReader, "UUID", f.dev.GetUUID)
	if !ok {
		return
	}
	f.out.UUID = uuid
	f.state = state.gpu(index, uuid)
	if name, ok := identify(f.gpuReader, "name", f.dev.GetName); ok {
		f.out.Name = name
	}
	if f.out.PCIBusID != "" {
		f.state.busID = f.out.PCIBusID
	}
	if f.out.Name != "" {
		f.state.name = f.out.Name
	}
}

func (f *deviceFields) readMIGMode() {
	f.mig, f.out.MIG.Supported = f.migMode()
	f.out.MIG.Current, f.out.MIG.Pending = f.mig.current, f.mig.pending
}

func (f *deviceFields) readModel() {
	if arch := read(f.gpuReader, "architecture", f.dev.GetArchitecture); arch != nil {
		f.out.Architecture = architectureName(*arch)
	}
	if cc := read2(f.gpuReader, "compute capability", f.dev.GetCudaComputeCapability); cc != nil {
		f.out.ComputeCapability = fmt.Sprintf("%d.%d", cc.first, cc.second)
	}
}

func (f *deviceFields) readMemory() {
	if mem := f.memory(); mem != nil {
		f.out.Memory = Memory{TotalMiB: mem.Total / mib, UsedMiB: mem.Used / mib, FreeMiB: mem.Free / mib, ReservedMiB: mem.reservedMiB()}
	}
}

func (f *deviceFields) readUtilization() {
	if u := f.utilizationRates(); u != nil {
		f.out.UtilizationGPU, f.out.UtilizationMemory = &u.Gpu, &u.Memory
	}
	f.out.TemperatureC = f.temperature()
}

func (f *deviceFields) readPower() {
	f.out.PowerDrawW = f.powerDraw()
	if mw := read(f.gpuReader, "power limit", f.dev.GetPowerManagementLimit); mw != nil {
		f.out.PowerLimitW = watts(*mw)
	}
	if mw := read2(f.gpuReader, "power limit range", f.dev.GetPowerManagementLimitConstraints); mw != nil {
		f.out.PowerLimitMinW, f.out.PowerLimitMaxW = watts(mw.first), watts(mw.second)
	}
}

func (f *deviceFields) readModes() {
	if state := read(f.gpuReader, "persistence mode", f.dev.GetPersistenceMode); state != nil {
		on := *state == gonvml.FEATURE_ENABLED
		f.out.PersistenceMode = &on
	}
	if mode := read(f.gpuReader, "compute mode", f.dev.GetComputeMode); mode != nil {
		f.out.ComputeMode = computeModeName(*mode)
	}
}

func (f *deviceFields) readECC() {
	e := &f.out.ECC
	if mode := read2(f.gpuReader, "ECC mode", f.dev.GetEccMode); mode != nil {
		on := mode.first == gonvml.FEATURE_ENABLED // current, not pending
		e.Enabled = &on
	}
	e.VolatileUncorrected = f.eccErrors(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC)
	e.AggregateUncorrected = f.eccErrors(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.AGGREGATE_ECC)
	e.RetiredPagesPending = f.retiredPagesPending()
	if rows := f.remappedRows(); rows != nil {
		e.RemappedRowsPending, e.RemappedRowsFailure = &rows.pending, &rows.failure
	}
}

func (f *deviceFields) readClocks() {
	c := &f.out.Clocks
	c.GraphicsMHz = f.clock(gonvml.CLOCK_GRAPHICS)
	c.SMMHz = f.clock(gonvml.CLOCK_SM)
	c.MemoryMHz = f.clock(gonvml.CLOCK_MEM)
	clock := func(what string, get func(gonvml.ClockType) (uint32, gonvml.Return), kind gonvml.ClockType) *uint32 {
		return read(f.gpuReader, what, func() (uint32, gonvml.Return) { return get(kind) })
	}
	c.MaxGraphicsMHz = clock("max graphics clock", f.dev.GetMaxClockInfo, gonvml.CLOCK_GRAPHICS)
	c.MaxMemoryMHz = clock("max memory clock", f.dev.GetMaxClockInfo, gonvml.CLOCK_MEM)
	c.AppGraphicsMHz = clock("application graphics clock", f.dev.GetApplicationsClock, gonvml.CLOCK_GRAPHICS)
	c.AppMemoryMHz = clock("application memory clock", f.dev.GetApplicationsClock, gonvml.CLOCK_MEM)
}

func (f *deviceFields) readProcesses() {
	if infos, ok := f.processes(); ok {
		f.out.Processes = append(f.out.Processes, f.names.processes(infos)...)
	}
}

func (f *deviceFields) readMIGDevices() {
	if !f.mig.current {
		return
	}
	for _, h := range f.migDevices(f.out.Memory.TotalMiB * mib) {
		f.out.MIG.Devices = append(f.out.MIG.Devices, h.MIGDevice)
	}
}

// busIDFromPCIInfo spells NVML's bus id ("00000000:07:00.0", an eight-digit
// domain, upper case) as sysfs does ("0000:07:00.0").
func busIDFromPCIInfo(pci gonvml.PciInfo) string {
	b := make([]byte, 0, len(pci.BusId))
	for _, c := range pci.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return normalizeBusID(string(b))
}

// normalizeBusID lower-cases a PCI address and writes its domain with at
// least four hex digits, as the kernel names /sys/bus/pci/devices entries.
func normalizeBusID(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	domain, rest, found := strings.Cut(id, ":")
	if !found || strings.Count(rest, ":") != 1 {
		return id
	}
	n, err := strconv.ParseUint(domain, 16, 32)
	if err != nil {
		return id
	}
	return fmt.Sprintf("%04x:%s", n, rest)
}

// architectureName spells an NVML architecture as nvidia-smi's "Product
// Architecture" does.
func architectureName(arch gonvml.DeviceArchitecture) string {
	switch arch {
	case gonvml.DEVICE_ARCH_KEPLER:
		return "Kepler"
	case gonvml.DEVICE_ARCH_MAXWELL:
		return "Maxwell"
	case gonvml.DEVICE_ARCH_PASCAL:
		return "Pascal"
	case gonvml.DEVICE_ARCH_VOLTA:
		return "Volta"
	case gonvml.DEVICE_ARCH_TURING:
		return "Turing"
	case gonvml.DEVICE_ARCH_AMPERE:
		return "Ampere"
	case gonvml.DEVICE_ARCH_ADA:
		return "Ada Lovelace"
	case gonvml.DEVICE_ARCH_HOPPER:
		return "Hopper"
	case gonvml.DEVICE_ARCH_BLACKWELL:
		return "Blackwell"
	case gonvml.DEVICE_ARCH_RUBIN:
		return "Rubin"
	}
	return "Unknown"
}

// computeModeName spells an NVML compute mode as the ComputeMode* constants.
func computeModeName(mode gonvml.ComputeMode) string {
	switch mode {
	case gonvml.COMPUTEMODE_DEFAULT:
		return ComputeModeDefault
	case gonvml.COMPUTEMODE_EXCLUSIVE_PROCESS:
		return ComputeModeExclusiveProcess
	case gonvml.COMPUTEMODE_PROHIBITED:
		return ComputeModeProhibited
	case gonvml.COMPUTEMODE_EXCLUSIVE_THREAD:
		return "Exclusive_Thread" // deprecated since CUDA 8; read, never set
	}
	return fmt.Sprintf("Unknown(%d)", mode)
}
