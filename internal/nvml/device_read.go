package nvml

import (
	"fmt"
	"strconv"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// deviceReader reads one GPU's fields. Identity readings (PCI address, UUID,
// name) must work; every other reading may be missing and leaves its field
// nil. An answer that says the GPU itself is in trouble (ERROR_GPU_IS_LOST,
// ERROR_RESET_REQUIRED) stops the reader and is recorded on the Device.
type deviceReader struct {
	dev     gonvml.Device
	out     *Device
	names   *processNames // shared by the GPUs of one Snapshot
	stopped bool
}

// readDevice reads GPU number index; names looks process names up.
func readDevice(dev gonvml.Device, index int, names *processNames) Device {
	d := Device{Index: index, Processes: []Process{}}
	r := &deviceReader{dev: dev, out: &d, names: names}
	steps := []func(){
		r.readIdentity,
		r.readMemory,
		r.readUtilization,
		r.readPower,
		r.readModes,
		r.readECC,
		r.readClocks,
		r.readProcesses,
		r.readMIG,
	}
	for _, step := range steps {
		if r.stopped {
			break
		}
		step()
	}
	return d
}

// ok says whether a reading can be used. A code that means the GPU is
// unusable stops the reader; other failures just leave the field unset.
func (r *deviceReader) ok(what string, ret gonvml.Return) bool {
	if ret == gonvml.SUCCESS {
		return true
	}
	if deviceFatal(ret) {
		r.stop(what, ret)
	}
	return false
}

// required is ok for an identity reading: any failure other than "not
// supported" or "no permission" stops the reader.
func (r *deviceReader) required(what string, ret gonvml.Return) bool {
	if ret == gonvml.SUCCESS {
		return true
	}
	if !unreported(ret) {
		r.stop(what, ret)
	}
	return false
}

func (r *deviceReader) stop(what string, ret gonvml.Return) {
	if r.stopped {
		return
	}
	r.stopped = true
	r.out.Lost = ret == gonvml.ERROR_GPU_IS_LOST
	r.out.Error = fmt.Sprintf("reading %s: %v", what, ret)
}

// optional calls f and returns a pointer to its value, or nil when the GPU
// does not report it.
func optional[T any](r *deviceReader, what string, f func() (T, gonvml.Return)) *T {
	v, ret := call1(f)
	if !r.ok(what, ret) {
		return nil
	}
	return &v
}

func (r *deviceReader) readIdentity() {
	if pci, ret := call1(r.dev.GetPciInfo); r.required("PCI info", ret) {
		r.out.PCIBusID = busIDFromPCIInfo(pci)
	}
	if r.stopped {
		return
	}
	if uuid, ret := call1(r.dev.GetUUID); r.required("UUID", ret) {
		r.out.UUID = uuid
	}
	if r.stopped {
		return
	}
	if name, ret := call1(r.dev.GetName); r.required("name", ret) {
		r.out.Name = name
	}
	if r.stopped {
		return
	}
	if arch, ret := call1(r.dev.GetArchitecture); r.ok("architecture", ret) {
		r.out.Architecture = architectureName(arch)
	}
	if major, minor, ret := call2(r.dev.GetCudaComputeCapability); r.ok("compute capability", ret) {
		r.out.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	}
}

func (r *deviceReader) readMemory() {
	if mem, ret := call1(r.dev.GetMemoryInfo); r.ok("memory", ret) {
		r.out.Memory = Memory{TotalMiB: mem.Total / mib, UsedMiB: mem.Used / mib, FreeMiB: mem.Free / mib}
	}
}

func (r *deviceReader) readUtilization() {
	if u, ret := call1(r.dev.GetUtilizationRates); r.ok("utilization", ret) {
		r.out.UtilizationGPU, r.out.UtilizationMemory = &u.Gpu, &u.Memory
	}
	r.out.TemperatureC = optional(r, "temperature", func() (uint32, gonvml.Return) {
		return r.dev.GetTemperature(gonvml.TEMPERATURE_GPU)
	})
}

func (r *deviceReader) readPower() {
	if mw, ret := call1(r.dev.GetPowerUsage); r.ok("power draw", ret) {
		r.out.PowerDrawW = watts(mw)
	}
	if mw, ret := call1(r.dev.GetPowerManagementLimit); r.ok("power limit", ret) {
		r.out.PowerLimitW = watts(mw)
	}
	if lo, hi, ret := call2(r.dev.GetPowerManagementLimitConstraints); r.ok("power limit range", ret) {
		r.out.PowerLimitMinW, r.out.PowerLimitMaxW = watts(lo), watts(hi)
	}
}

func (r *deviceReader) readModes() {
	if state, ret := call1(r.dev.GetPersistenceMode); r.ok("persistence mode", ret) {
		on := state == gonvml.FEATURE_ENABLED
		r.out.PersistenceMode = &on
	}
	if mode, ret := call1(r.dev.GetComputeMode); r.ok("compute mode", ret) {
		r.out.ComputeMode = computeModeName(mode)
	}
}

func (r *deviceReader) readECC() {
	e := &r.out.ECC
	if current, _, ret := call2(r.dev.GetEccMode); r.ok("ECC mode", ret) {
		on := current == gonvml.FEATURE_ENABLED
		e.Enabled = &on
	}
	e.VolatileUncorrected = optional(r, "volatile ECC errors", func() (uint64, gonvml.Return) {
		return r.dev.GetTotalEccErrors(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC)
	})
	e.AggregateUncorrected = optional(r, "aggregate ECC errors", func() (uint64, gonvml.Return) {
		return r.dev.GetTotalEccErrors(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.AGGREGATE_ECC)
	})
	if state, ret := call1(r.dev.GetRetiredPagesPendingStatus); r.ok("retired pages", ret) {
		pending := state == gonvml.FEATURE_ENABLED
		e.RetiredPagesPending = &pending
	}
	if _, _, pending, failure, ret := call4(r.dev.GetRemappedRows); r.ok("remapped rows", ret) {
		e.RemappedRowsPending, e.RemappedRowsFailure = &pending, &failure
	}
}

func (r *deviceReader) readClocks() {
	clock := func(what string, f func(gonvml.ClockType) (uint32, gonvml.Return), kind gonvml.ClockType) *uint32 {
		return optional(r, what, func() (uint32, gonvml.Return) { return f(kind) })
	}
	c := &r.out.Clocks
	c.GraphicsMHz = clock("graphics clock", r.dev.GetClockInfo, gonvml.CLOCK_GRAPHICS)
	c.SMMHz = clock("SM clock", r.dev.GetClockInfo, gonvml.CLOCK_SM)
	c.MemoryMHz = clock("memory clock", r.dev.GetClockInfo, gonvml.CLOCK_MEM)
	c.MaxGraphicsMHz = clock("max graphics clock", r.dev.GetMaxClockInfo, gonvml.CLOCK_GRAPHICS)
	c.MaxMemoryMHz = clock("max memory clock", r.dev.GetMaxClockInfo, gonvml.CLOCK_MEM)
	c.AppGraphicsMHz = clock("application graphics clock", r.dev.GetApplicationsClock, gonvml.CLOCK_GRAPHICS)
	c.AppMemoryMHz = clock("application memory clock", r.dev.GetApplicationsClock, gonvml.CLOCK_MEM)
}

// valueNotAvailable is NVML_VALUE_NOT_AVAILABLE: NVML reports it as a
// process's memory when it cannot say (e.g. under MIG without privilege).
const valueNotAvailable = ^uint64(0)

func (r *deviceReader) readProcesses() {
	procs, ret := call1(r.dev.GetComputeRunningProcesses)
	if !r.ok("processes", ret) {
		return
	}
	r.out.Processes = append(r.out.Processes, r.names.processes(procs)...)
}

func (r *deviceReader) readMIG() {
	var fatal gonvml.Return
	r.out.MIG, fatal = readMIGState(r.dev, r.out.Memory.TotalMiB)
	if fatal != gonvml.SUCCESS {
		r.stop("MIG state", fatal)
	}
}

const mib = 1024 * 1024

func watts(milliwatts uint32) *float64 {
	w := float64(milliwatts) / 1000
	return &w
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
