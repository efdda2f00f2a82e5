// Package nvmltest gives tests a DGX A100 that answers every NVML call: go-nvml's
// dgxa100 mock (8× A100-SXM4-40GB, driver 550.54.15) with deterministic UUIDs,
// stateful settings (persistence, compute mode, power limit, application
// clocks) and health counters a test can change, and every call the mock leaves
// nil answering ERROR_NOT_SUPPORTED, as a real GPU does for a feature it lacks.
//
// For telemetry it also plays GPUs over time: a scripted series of steps per
// GPU on a virtual clock (script.go), NVML events (events.go), NVLinks
// between GPUs (nvlink.go), faults such as a lost GPU and its reset
// (faults.go), and a count of the NVML calls made (calls.go).
// What a call answers, and in which units, follows nvml.h; where NVML leaves
// a choice to the hardware, the double's choice is named where it is made.
package nvmltest

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
)

// GPU is the state behind one mocked GPU. Tests change it directly, before or
// between calls; a script (Fleet.Script) changes it at every step.
type GPU struct {
	mu sync.Mutex

	Persistence        bool
	ComputeMode        gonvml.ComputeMode
	PowerLimitMW       uint32 // enforced limit, milliwatts
	PowerMinMW         uint32
	PowerMaxMW         uint32
	PowerDrawMW        uint32
	AppMemoryMHz       uint32
	AppGraphicsMHz     uint32
	TemperatureC       uint32
	UtilizationGPU     uint32 // nvmlDeviceGetUtilizationRates' gpu
	VolatileECC        uint64 // uncorrected, since driver load
	AggregateECC       uint64
	RemapPending       bool
	RemapFailure       bool
	Processes          []gonvml.ProcessInfo
	Lost               bool // every call answers ERROR_GPU_IS_LOST
	PersistenceSetCall int  // how many times SetPersistenceMode was called

	// ReservedMiB is the memory the driver keeps for itself:
	// nvmlDeviceGetMemoryInfo_v2 reports it apart, v1 counts it as used.
	ReservedMiB uint64

	UtilizationMemory     uint32 // nvmlDeviceGetUtilizationRates' memory
	DecoderUtilization    uint32 // an A100 has NVDEC but no NVENC: encoder utilization is not supported
	MemoryTemperatureC    uint32 // HBM temperature, NVML_FI_DEV_MEMORY_TEMP
	GraphicsClockMHz      uint32 // current clocks
	SMClockMHz            uint32
	MemoryClockMHz        uint32
	ThrottleReasons       uint64 // nvmlClocksEventReason* bits
	PCIeTxKBps            uint32
	PCIeRxKBps            uint32
	PCIeReplays           uint64
	CorrectedVolatileECC  uint64
	CorrectedAggregateECC uint64
	RemappedCorrectable   int
	RemappedUncorrectable int
	EnergyMJ              uint64                           // since driver load; Advance adds PowerDrawMW × StepDuration
	ViolationNs           map[gonvml.PerfPolicyType]uint64 // nvmlDeviceGetViolationStatus; Advance adds StepDuration while ThrottleReasons holds the policy's bits
	SupportedEvents       uint64                           // nvmlDeviceGetSupportedEventTypes
	NVLinks               []NVLink                         // ConnectNVLink adds them

	// memoryUsedMiB overrides the mock's MemoryInfo while a script runs.
	memoryUsedMiB *uint64
	// eventSets are the sets this GPU is registered on, with their masks.
	eventSets map[*eventSet]uint64
	series    // the script and sample buffers (script.go)
}

// Fleet is the mocked machine.
type Fleet struct {
	Server *dgxa100.Server
	GPUs   [8]*GPU
	// ProcessNames answer nvmlSystemGetProcessName; a PID not listed
	// answers ERROR_NOT_FOUND.
	ProcessNames map[uint32]string
	// StepDuration is how long one scripted step lasts on the virtual clock;
	// 1 s unless a test sets it before Script.
	StepDuration time.Duration

	mu             sync.Mutex
	clock          time.Time // the virtual clock (script.go)
	driverUnloaded bool      // nvmlInit answers ERROR_DRIVER_NOT_LOADED (faults.go)
	calls          callCounter
	gpuCalls       [8]callCounter // the calls on each GPU's handle
}

// NewDGXA100 returns a healthy, idle DGX A100: persistence off, default
// compute mode, power limit 400 W (range 100–400 W) drawing 61 W at 31 °C
// (memory 33 °C), clocks 1410/1410/1215 MHz (graphics/SM/memory),
// application clocks 1215/1410 MHz, throttle reason GPU idle, no ECC errors,
// no processes, no NVLink, XID and ECC events supported. Its sample buffers
// are empty (nvmlDeviceGetSamples answers ERROR_NOT_FOUND, as for an idle
// GPU) until a script fills them.
func NewDGXA100() *Fleet {
	return newDGXA100(len(dgxBusNumbers))
}

// newDGXA100 is NewDGXA100 with only the first visible GPUs enumerated.
func newDGXA100(visible int) *Fleet {
	f := &Fleet{Server: dgxa100.New(), StepDuration: time.Second, clock: clockStart}
	notSupported(&f.Server.Interface)
	f.Server.SystemGetProcessNameFunc = func(pid int) (string, gonvml.Return) {
		if name, ok := f.ProcessNames[uint32(pid)]; ok {
			return name, gonvml.SUCCESS
		}
		return "", gonvml.ERROR_NOT_FOUND
	}
	f.wireEventSets()
	for i := range f.Server.Devices {
		dev := f.Device(i)
		dev.UUID = fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", i)
		dev.PciBusID = fmt.Sprintf("0000:%s:00.0", dgxBusNumbers[i])
		gpu := &GPU{
			PowerLimitMW: 400000, PowerMinMW: 100000, PowerMaxMW: 400000, PowerDrawMW: 61000,
			AppMemoryMHz: 1215, AppGraphicsMHz: 1410, TemperatureC: 31,
			MemoryTemperatureC: 33, GraphicsClockMHz: 1410, SMClockMHz: 1410, MemoryClockMHz: 1215,
			ThrottleReasons: gonvml.ClocksEventReasonGpuIdle,
			ViolationNs:     map[gonvml.PerfPolicyType]uint64{},
			SupportedEvents: a100Events,
			series:          series{clockUs: uint64(clockStart.UnixMicro())},
		}
		f.GPUs[i] = gpu
		notSupported(&dev.Device)
		wire(dev, gpu)
		f.wireTelemetry(dev, gpu)
		f.wireNVLink(dev, gpu)
		f.wireEvents(dev, gpu)
	}
	f.wireVisibleGPUs(visible)
	f.wireDriver()
	f.countCalls()
	return f
}

// a100Events are the event types an A100 reports (nvidia-smi's "Supported
// Events" lists these, plus PState and clock changes).
const a100Events = gonvml.EventTypeSingleBitEccError | gonvml.EventTypeDoubleBitEccError |
	gonvml.EventTypeXidCriticalError | gonvml.EventTypePState | gonvml.EventTypeClock

// notSupported fills every nil func field of a go-nvml mock struct with a
// function that returns zero values and ERROR_NOT_SUPPORTED.
func notSupported(mockStruct any) {
	returnType := reflect.TypeOf(gonvml.SUCCESS)
	v := reflect.ValueOf(mockStruct).Elem()
	for i := 0; i < v.NumField(); i++ {
		field := v.Field(i)
		if field.Kind() != reflect.Func || !field.IsNil() || !field.CanSet() {
			continue
		}
		fnType := field.Type()
		field.Set(reflect.MakeFunc(fnType, func([]reflect.Value) []reflect.Value {
			results := make([]reflect.Value, fnType.NumOut())
			for r := range results {
				out := fnType.Out(r)
				results[r] = reflect.Zero(out)
				if out == returnType {
					results[r] = reflect.ValueOf(gonvml.ERROR_NOT_SUPPORTED)
				}
			}
			return results
		}))
	}
}

// dgxBusNumbers are the PCI bus numbers of the eight GPUs of a DGX A100.
var dgxBusNumbers = [8]string{"07", "0f", "47", "4e", "87", "90", "b7", "bd"}

func wire(dev *dgxa100.Device, gpu *GPU) {
	lost := func() bool { gpu.mu.Lock(); defer gpu.mu.Unlock(); return gpu.Lost }
	uuid, name := dev.GetUUIDFunc, dev.GetNameFunc
	dev.GetUUIDFunc = func() (string, gonvml.Return) {
		if lost() {
			return "", gonvml.ERROR_GPU_IS_LOST
		}
		return uuid()
	}
	dev.GetNameFunc = func() (string, gonvml.Return) {
		if lost() {
			return "", gonvml.ERROR_GPU_IS_LOST
		}
		return name()
	}
	dev.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return pciInfo(dev.PciBusID), ok(gpu)
	}
	dev.GetPersistenceModeFunc = func() (gonvml.EnableState, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return enable(gpu.Persistence), ok(gpu)
	}
	dev.SetPersistenceModeFunc = func(state gonvml.EnableState) gonvml.Return {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		gpu.PersistenceSetCall++
		gpu.Persistence = state == gonvml.FEATURE_ENABLED
		return ok(gpu)
	}
	dev.GetComputeModeFunc = func() (gonvml.ComputeMode, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return gpu.ComputeMode, ok(gpu)
	}
	dev.SetComputeModeFunc = func(mode gonvml.ComputeMode) gonvml.Return {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		gpu.ComputeMode = mode
		return ok(gpu)
	}
	powerLimit := func() (uint32, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return gpu.PowerLimitMW, ok(gpu)
	}
	dev.GetEnforcedPowerLimitFunc = powerLimit
	dev.GetPowerManagementLimitFunc = powerLimit
	dev.GetPowerManagementLimitConstraintsFunc = func() (uint32, uint32, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return gpu.PowerMinMW, gpu.PowerMaxMW, ok(gpu)
	}
	dev.SetPowerManagementLimitFunc = func(mw uint32) gonvml.Return {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		if mw < gpu.PowerMinMW || mw > gpu.PowerMaxMW {
			return gonvml.ERROR_INVALID_ARGUMENT
		}
		gpu.PowerLimitMW = mw
		return ok(gpu)
	}
	dev.GetPowerUsageFunc = func() (uint32, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return gpu.PowerDrawMW, ok(gpu)
	}
	dev.GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return gpu.TemperatureC, ok(gpu)
	}
	dev.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return gonvml.Utilization{Gpu: gpu.UtilizationGPU, Memory: gpu.UtilizationMemory}, ok(gpu)
	}
	dev.GetApplicationsClockFunc = func(clock gonvml.ClockType) (uint32, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		switch clock {
		case gonvml.CLOCK_MEM:
			return gpu.AppMemoryMHz, ok(gpu)
		case gonvml.CLOCK_GRAPHICS:
			return gpu.AppGraphicsMHz, ok(gpu)
		}
		return 0, gonvml.ERROR_NOT_SUPPORTED
	}
	dev.SetApplicationsClocksFunc = func(mem, gfx uint32) gonvml.Return {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		gpu.AppMemoryMHz, gpu.AppGraphicsMHz = mem, gfx
		return ok(gpu)
	}
	dev.GetClockInfoFunc = func(clock gonvml.ClockType) (uint32, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		switch clock {
		case gonvml.CLOCK_GRAPHICS:
			return gpu.GraphicsClockMHz, ok(gpu)
		case gonvml.CLOCK_SM:
			return gpu.SMClockMHz, ok(gpu)
		case gonvml.CLOCK_MEM:
			return gpu.MemoryClockMHz, ok(gpu)
		}
		return 0, gonvml.ERROR_NOT_SUPPORTED
	}
	dev.GetMaxClockInfoFunc = func(clock gonvml.ClockType) (uint32, gonvml.Return) {
		return map[gonvml.ClockType]uint32{gonvml.CLOCK_GRAPHICS: 1410, gonvml.CLOCK_SM: 1410, gonvml.CLOCK_MEM: 1215}[clock], ok(gpu)
	}
	dev.GetEccModeFunc = func() (gonvml.EnableState, gonvml.EnableState, gonvml.Return) {
		return gonvml.FEATURE_ENABLED, gonvml.FEATURE_ENABLED, ok(gpu)
	}
	dev.GetTotalEccErrorsFunc = func(kind gonvml.MemoryErrorType, counter gonvml.EccCounterType) (uint64, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		switch {
		case kind == gonvml.MEMORY_ERROR_TYPE_CORRECTED && counter == gonvml.VOLATILE_ECC:
			return gpu.CorrectedVolatileECC, ok(gpu)
		case kind == gonvml.MEMORY_ERROR_TYPE_CORRECTED:
			return gpu.CorrectedAggregateECC, ok(gpu)
		case counter == gonvml.VOLATILE_ECC:
			return gpu.VolatileECC, ok(gpu)
		}
		return gpu.AggregateECC, ok(gpu)
	}
	dev.GetRemappedRowsFunc = func() (int, int, bool, bool, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return gpu.RemappedCorrectable, gpu.RemappedUncorrectable, gpu.RemapPending, gpu.RemapFailure, ok(gpu)
	}
	dev.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return append([]gonvml.ProcessInfo(nil), gpu.Processes...), ok(gpu)
	}
	dev.GetTopologyCommonAncestorFunc = func(other gonvml.Device) (gonvml.GpuTopologyLevel, gonvml.Return) {
		// Two GPUs per PCIe switch, four per CPU socket, as on a DGX A100.
		peer := Mock(other)
		switch {
		case dev.Index/2 == peer.Index/2:
			return gonvml.TOPOLOGY_MULTIPLE, ok(gpu)
		case dev.Index/4 == peer.Index/4:
			return gonvml.TOPOLOGY_NODE, ok(gpu)
		}
		return gonvml.TOPOLOGY_SYSTEM, ok(gpu)
	}
}

// pciInfo is NVML's PCI info for a GPU at busID (sysfs spelling): NVML
// spells the domain with eight digits and the bus in upper case.
func pciInfo(busID string) gonvml.PciInfo {
	var info gonvml.PciInfo
	nvmlBusID := "0000" + strings.ToUpper(busID)
	for i := 0; i < len(nvmlBusID) && i < len(info.BusId)-1; i++ {
		info.BusId[i] = int8(nvmlBusID[i])
	}
	info.PciDeviceId = 0x20B010DE
	return info
}

// ok is what a call of gpu answers when it has an answer; gpu.mu must be
// held where the GPU can change concurrently.
func ok(gpu *GPU) gonvml.Return {
	if gpu.Lost {
		return gonvml.ERROR_GPU_IS_LOST
	}
	return gonvml.SUCCESS
}

func enable(on bool) gonvml.EnableState {
	if on {
		return gonvml.FEATURE_ENABLED
	}
	return gonvml.FEATURE_DISABLED
}

// Mock returns the dgxa100 mock behind a device handle the fleet gave out,
// to change what it answers. It panics on any other device: a test bug.
func Mock(d gonvml.Device) *dgxa100.Device {
	mock, ok := d.(*dgxa100.Device)
	if !ok {
		panic(fmt.Sprintf("nvmltest.Mock: %T is not a dgxa100 mock device", d))
	}
	return mock
}

// Device returns the mock of GPU i.
func (f *Fleet) Device(i int) *dgxa100.Device { return Mock(f.Server.Devices[i]) }
