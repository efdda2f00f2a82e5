package nvmltest

import (
	"encoding/binary"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
)

// This file owns the answers to the telemetry calls that go-nvml's dgxa100
// mock leaves out: sample buffers, memory in use, decoder utilization,
// memory temperature, energy, throttle reasons, PCIe throughput and
// replays, violation times. Page retirement and the encoder stay
// ERROR_NOT_SUPPORTED, as on an A100.

// decoderPeriodUs is the sampling period nvmlDeviceGetDecoderUtilization
// reports, µs (1/6 s).
const decoderPeriodUs = 166_667

func (f *Fleet) wireTelemetry(dev *dgxa100.Device, gpu *GPU) {
	// v2 reports the driver's reserve apart from what processes use; v1
	// counts it as used. dev.MemoryInfo (or the scripted use) is what
	// processes use.
	memoryV2 := func() gonvml.Memory_v2 {
		mem := dev.MemoryInfo
		if gpu.memoryUsedMiB != nil {
			mem.Used = min(*gpu.memoryUsedMiB*mib, mem.Total)
		}
		reserved := min(gpu.ReservedMiB*mib, mem.Total-mem.Used)
		return gonvml.Memory_v2{Total: mem.Total, Reserved: reserved, Used: mem.Used, Free: mem.Total - mem.Used - reserved}
	}
	dev.GetMemoryInfo_v2Func = func() (gonvml.Memory_v2, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return memoryV2(), ok(gpu)
	}
	dev.GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		mem := memoryV2()
		return gonvml.Memory{Total: mem.Total, Used: mem.Used + mem.Reserved, Free: mem.Free}, ok(gpu)
	}
	dev.GetSamplesFunc = func(kind gonvml.SamplingType, lastSeen uint64) (gonvml.ValueType, []gonvml.Sample, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		if gpu.Lost {
			return 0, nil, gonvml.ERROR_GPU_IS_LOST
		}
		return gpu.samplesAfter(kind, lastSeen)
	}
	dev.GetDecoderUtilizationFunc = func() (uint32, uint32, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return gpu.DecoderUtilization, decoderPeriodUs, ok(gpu)
	}
	dev.GetFieldValuesFunc = func(values []gonvml.FieldValue) gonvml.Return {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		if gpu.Lost {
			return gonvml.ERROR_GPU_IS_LOST
		}
		for i := range values {
			v := &values[i]
			v.Timestamp = int64(gpu.clockUs)
			switch v.FieldId {
			case gonvml.FI_DEV_MEMORY_TEMP:
				v.ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_INT)
				putUint32(&v.Value, gpu.MemoryTemperatureC)
				v.NvmlReturn = uint32(gonvml.SUCCESS)
			default:
				v.NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
			}
		}
		return gonvml.SUCCESS
	}
	dev.GetTotalEnergyConsumptionFunc = func() (uint64, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return gpu.EnergyMJ, ok(gpu)
	}
	reasons := func() (uint64, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return gpu.ThrottleReasons, ok(gpu)
	}
	dev.GetCurrentClocksEventReasonsFunc = reasons
	dev.GetCurrentClocksThrottleReasonsFunc = reasons
	dev.GetPcieThroughputFunc = func(counter gonvml.PcieUtilCounter) (uint32, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		switch counter {
		case gonvml.PCIE_UTIL_TX_BYTES:
			return gpu.PCIeTxKBps, ok(gpu)
		case gonvml.PCIE_UTIL_RX_BYTES:
			return gpu.PCIeRxKBps, ok(gpu)
		}
		return 0, gonvml.ERROR_INVALID_ARGUMENT
	}
	dev.GetPcieReplayCounterFunc = func() (int, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		return int(gpu.PCIeReplays), ok(gpu)
	}
	dev.GetViolationStatusFunc = func(policy gonvml.PerfPolicyType) (gonvml.ViolationTime, gonvml.Return) {
		gpu.mu.Lock()
		defer gpu.mu.Unlock()
		if _, modeled := violationReasons[policy]; !modeled {
			return gonvml.ViolationTime{}, gonvml.ERROR_NOT_SUPPORTED
		}
		// nvmlViolationTime_t: referenceTime in µs (CPU time), violationTime in ns.
		return gonvml.ViolationTime{ReferenceTime: gpu.clockUs, ViolationTime: gpu.ViolationNs[policy]}, ok(gpu)
	}
}

const mib = 1024 * 1024

// putUint32 writes an unsigned int into nvmlValue_t's bytes, in the
// machine's byte order as the C union holds it.
func putUint32(value *[8]byte, v uint32) {
	binary.NativeEndian.PutUint32(value[:4], v)
}
