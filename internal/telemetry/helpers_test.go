package telemetry

import (
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// t0 is the first sample's time in these tests.
var t0 = time.Date(2026, 11, 26, 8, 0, 0, 123_000_000, time.UTC)

func ptr[T any](v T) *T { return &v }

// a100 is an 80 GB A100 reading as the tests start from: busy, cool,
// unthrottled, one process.
func a100(index int) nvml.GPUSample {
	return nvml.GPUSample{
		Index:             index,
		UUID:              "GPU-00000000-0000-4000-8000-00000000000" + string(rune('0'+index)),
		Name:              "NVIDIA A100-SXM4-80GB",
		PCIBusID:          "0000:07:00.0",
		UtilizationGPU:    ptr[uint32](45),
		UtilizationMemory: ptr[uint32](12),
		MemoryTotalMiB:    ptr[uint64](81920),
		MemoryUsedMiB:     ptr[uint64](10240),
		MemoryFreeMiB:     ptr[uint64](71680),
		TemperatureC:      ptr[uint32](40),
		PowerDrawW:        ptr(61.234),
		PowerLimitW:       ptr(400.0),
		GraphicsClockMHz:  ptr[uint32](1410),
		SMClockMHz:        ptr[uint32](1410),
		MemoryClockMHz:    ptr[uint32](1593),
		ThrottleReasons:   ptr[uint64](0),
		ECC: nvml.ECCCounters{
			CorrectedVolatile:   ptr[uint64](0),
			UncorrectedVolatile: ptr[uint64](0),
		},
		Processes: []nvml.Process{{PID: 4242, Name: "python", UsedMemoryMiB: 10000}},
	}
}

// sample is one pass over gpus at t0 + i seconds.
func sample(i int, gpus ...nvml.GPUSample) nvml.TelemetrySample {
	return nvml.TelemetrySample{
		Time:   t0.Add(time.Duration(i) * time.Second),
		Driver: nvml.Driver{Loaded: true, Version: "550.54.15", CUDAVersion: "12.4"},
		GPUs:   gpus,
	}
}
