package nvml

import (
	"fmt"
	"sync"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// newTelemetry is a Telemetry over fleet, on its virtual clock.
func newTelemetry(t testing.TB, fleet *nvmltest.Fleet) *GPUs {
	t.Helper()
	gpus := New(Options{Lib: fleet.Server, SysfsRoot: t.TempDir(), Now: fleet.Now})
	t.Cleanup(func() { require.NoError(t, gpus.Close()) })
	return gpus
}

// sampleGPU samples GPU i alone.
func sampleGPU(t *testing.T, gpus *GPUs, i int) GPUSample {
	t.Helper()
	s, err := gpus.Sample(SampleOptions{Indices: []int{i}})
	require.NoError(t, err)
	require.Len(t, s.GPUs, 1)
	return s.GPUs[0]
}

// busy is a step of a GPU at work.
func busy(samples ...uint32) nvmltest.Step {
	return nvmltest.Step{
		UtilizationSamples: samples, MemoryUtilization: 40, MemoryUsedMiB: 20480,
		TemperatureC: 60, PowerDrawMW: 300000, SMClockMHz: 1410, MemoryClockMHz: 1215,
		PCIeTxKBps: 1000, PCIeRxKBps: 2000,
	}
}

func TestSampleAveragesTheUtilizationBuffer(t *testing.T) {
	type reading struct {
		percent  uint32
		averaged bool
	}
	tests := []struct {
		description string
		steps       []nvmltest.Step
		advance     int // steps elapsed before the first Sample
		want        []reading
	}{
		{
			description: "the mean of a step's samples is rounded to the nearest percent, halves up",
			steps:       []nvmltest.Step{busy(0, 100, 100, 100, 0, 100)},
			want:        []reading{{67, true}},
		},
		{
			description: "each Sample averages only the samples after the last one it saw",
			steps:       []nvmltest.Step{busy(0, 100, 100, 100, 0, 100), busy(10, 20), busy(51, 50)},
			want:        []reading{{67, true}, {15, true}, {51, true}},
		},
		{
			description: "the first Sample averages the last second of the buffer only",
			steps:       []nvmltest.Step{busy(100, 100), busy(100, 100), busy(30, 30, 30)},
			advance:     2,
			want:        []reading{{30, true}},
		},
		{
			description: "a step without new samples falls back to the utilization rate",
			steps:       []nvmltest.Step{busy(90, 80), busy(), busy(70)},
			want:        []reading{{85, true}, {0, false}, {70, true}},
		},
		{
			description: "the last step repeats once the script has run out",
			steps:       []nvmltest.Step{busy(100), busy(20, 40)},
			want:        []reading{{100, true}, {30, true}, {30, true}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			fleet := nvmltest.NewDGXA100()
			fleet.Script(0, tc.steps...)
			for range tc.advance {
				fleet.Advance()
			}
			gpus := newTelemetry(t, fleet)
			for i, want := range tc.want {
				if i > 0 {
					fleet.Advance()
				}
				got := sampleGPU(t, gpus, 0)
				require.NotNil(t, got.UtilizationGPU, "sample %d", i)
				require.Equal(t, want, reading{*got.UtilizationGPU, got.UtilizationAveraged}, "sample %d", i)
				require.Equal(t, uint32(40), *got.UtilizationMemory, "sample %d: memory utilization", i)
			}
		})
	}
}

func TestSampleUtilizationWithoutSampleBuffers(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.GPUs[1].UtilizationGPU, fleet.GPUs[1].UtilizationMemory = 12, 3 // unscripted: the buffer stays empty
	getSamples := 0
	fleet.Device(2).GetSamplesFunc = func(gonvml.SamplingType, uint64) (gonvml.ValueType, []gonvml.Sample, gonvml.Return) {
		getSamples++
		return 0, nil, gonvml.ERROR_NOT_SUPPORTED
	}
	fleet.GPUs[2].UtilizationGPU = 55
	gpus := newTelemetry(t, fleet)

	for range 3 {
		s, err := gpus.Sample(SampleOptions{Indices: []int{1, 2}})
		require.NoError(t, err)
		idle, unsupported := s.GPUs[0], s.GPUs[1]
		require.Equal(t, uint32(12), *idle.UtilizationGPU, "an empty buffer (ERROR_NOT_FOUND) falls back to the rate")
		require.Equal(t, uint32(3), *idle.UtilizationMemory)
		require.False(t, idle.UtilizationAveraged)
		require.Equal(t, uint32(55), *unsupported.UtilizationGPU, "no buffer support falls back to the rate")
		require.False(t, unsupported.UtilizationAveraged)
	}
	require.Equal(t, 2, getSamples, "a GPU without sample buffers is asked once per buffer, not on every Sample")
}

func TestSampleReadsEveryReadingTheGPUGives(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.ProcessNames = map[uint32]string{4242: "python3"}
	step := busy(50)
	step.ThrottleReasons = gonvml.ClocksEventReasonSwPowerCap
	step.Processes = []gonvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 2048 * 1024 * 1024}, {Pid: 4343, UsedGpuMemory: ^uint64(0)}}
	fleet.Script(4, step)
	gpus := newTelemetry(t, fleet)

	s, err := gpus.Sample(SampleOptions{Indices: []int{4}})
	require.NoError(t, err)
	require.Equal(t, Driver{Loaded: true, Version: "550.54.15", CUDAVersion: "12.4", NVMLVersion: "12.550.54.15"}, s.Driver)
	require.Equal(t, fleet.Now(), s.Time)
	u32 := func(v uint32) *uint32 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	f64 := func(v float64) *float64 { return &v }
	no := false
	require.Equal(t, GPUSample{
		Index: 4, UUID: "GPU-00000000-0000-4000-8000-000000000004", Name: "Mock NVIDIA A100-SXM4-40GB", PCIBusID: "0000:87:00.0",
		UtilizationGPU: u32(50), UtilizationMemory: u32(40), UtilizationAveraged: true,
		UtilizationDecoder: u32(0), // the encoder is not supported: nil
		MemoryTotalMiB:     u64(40960), MemoryUsedMiB: u64(20480), MemoryFreeMiB: u64(20480), MemoryReservedMiB: u64(0),
		TemperatureC: u32(60), MemoryTemperatureC: u32(33),
		PowerDrawW: f64(300), PowerLimitW: f64(400), EnergyMilliJoules: u64(0),
		GraphicsClockMHz: u32(1410), SMClockMHz: u32(1410), MemoryClockMHz: u32(1215),
		ThrottleReasons: u64(gonvml.ClocksEventReasonSwPowerCap),
		PCIeTxKBps:      u32(1000), PCIeRxKBps: u32(2000), PCIeReplays: u64(0),
		ECC: ECCCounters{
			CorrectedVolatile: u64(0), UncorrectedVolatile: u64(0), CorrectedAggregate: u64(0), UncorrectedAggregate: u64(0),
			// An A100 remaps rows; it retires no pages: those stay nil.
			RemappedCorrectable: u64(0), RemappedUncorrectable: u64(0), RemapPending: &no, RemapFailure: &no,
		},
		Violations: ViolationTimes{PowerNs: u64(0), ThermalNs: u64(0), SyncBoostNs: u64(0), BoardLimitNs: u64(0), LowUtilNs: u64(0), ReliabilityNs: u64(0)},
		Processes: []Process{
			{PID: 4242, Name: "python3", UsedMemoryMiB: 2048},
			{PID: 4343, Name: "", UsedMemoryMiB: 0}, // NVML_VALUE_NOT_AVAILABLE, and no name
		},
	}, s.GPUs[0])
}

func TestSampleAsksOnceForWhatAGPUDoesNotSupport(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	gpus := newTelemetry(t, fleet)
	_, err := gpus.Sample(SampleOptions{})
	require.NoError(t, err)
	first := fleet.Calls()
	for _, method := range []string{"GetEncoderUtilization", "GetRetiredPages", "GetRetiredPagesPendingStatus", "GetNvLinkState"} {
		require.NotZero(t, first.ByMethod[method], "%s is asked on the first Sample", method)
	}

	s, err := gpus.Sample(SampleOptions{})
	require.NoError(t, err)
	second := fleet.Calls()
	for _, method := range []string{"GetEncoderUtilization", "GetRetiredPages", "GetRetiredPagesPendingStatus", "GetNvLinkState", "GetName", "GetPciInfo", "SystemGetDriverVersion"} {
		require.Equal(t, first.ByMethod[method], second.ByMethod[method], "%s is not asked again", method)
	}
	for _, g := range s.GPUs {
		require.Nil(t, g.UtilizationEncoder)
		require.Nil(t, g.ECC.RetiredSingleBit)
		require.Nil(t, g.ECC.RetiredPending)
		require.Nil(t, g.NVLinkErrors, "no NVLink")
		require.Equal(t, "Mock NVIDIA A100-SXM4-40GB", g.Name, "the name is remembered")
	}
	require.Less(t, second.Total-first.Total, first.Total, "a later Sample makes fewer calls than the first")

	require.NoError(t, gpus.Close())
	_, err = gpus.Sample(SampleOptions{})
	require.NoError(t, err)
	require.Greater(t, fleet.Calls().ByMethod["GetEncoderUtilization"], second.ByMethod["GetEncoderUtilization"],
		"after Close, NVML (maybe a new driver) is asked again")
}

func TestSampleForgetsUnsupportedReadingsWhenMIGModeChanges(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.Script(0, busy(80))
	d := fleet.Device(0)
	samples := d.GetSamplesFunc
	d.GetSamplesFunc = func(kind gonvml.SamplingType, lastSeen uint64) (gonvml.ValueType, []gonvml.Sample, gonvml.Return) {
		if d.MigMode == gonvml.DEVICE_MIG_ENABLE {
			return 0, nil, gonvml.ERROR_NOT_SUPPORTED // nvml.h: not supported on MIG-enabled GPUs
		}
		return samples(kind, lastSeen)
	}
	gpus := newTelemetry(t, fleet)

	d.MigMode = gonvml.DEVICE_MIG_ENABLE
	require.False(t, sampleGPU(t, gpus, 0).UtilizationAveraged)
	d.MigMode = gonvml.DEVICE_MIG_DISABLE
	got := sampleGPU(t, gpus, 0)
	require.True(t, got.UtilizationAveraged, "the buffer is asked again once MIG is off")
	require.Equal(t, uint32(80), *got.UtilizationGPU)
}

func TestSampleCountersGrowAcrossAdvance(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	capped := busy(100)
	capped.ThrottleReasons = gonvml.ClocksEventReasonSwPowerCap | gonvml.ClocksThrottleReasonHwThermalSlowdown
	capped.CorrectedECC = 2
	flaky := busy(100)
	flaky.UncorrectedECC = 1
	fleet.Script(0, capped, flaky)
	fleet.ConnectNVLink(0, 1, 4)
	gpus := newTelemetry(t, fleet)

	before := sampleGPU(t, gpus, 0)
	fleet.Advance() // one second of flaky
	fleet.GPUs[0].NVLinks[1].Replay = 3
	fleet.GPUs[0].NVLinks[2].CRCFlit = 7
	fleet.GPUs[0].NVLinks[3].Down, fleet.GPUs[0].NVLinks[3].Recovery = true, 100 // a link that is down is not summed
	fleet.GPUs[0].PCIeReplays = 4
	after := sampleGPU(t, gpus, 0)
	fleet.Advance() // flaky again: the last step repeats
	later := sampleGPU(t, gpus, 0)

	require.Equal(t, uint64(0), *before.EnergyMilliJoules)
	require.Equal(t, uint64(300000), *after.EnergyMilliJoules, "300 W for one second")
	require.Equal(t, uint64(600000), *later.EnergyMilliJoules)
	require.Equal(t, uint64(2), *before.ECC.CorrectedVolatile)
	require.Equal(t, uint64(2), *after.ECC.CorrectedAggregate)
	require.Equal(t, uint64(1), *after.ECC.UncorrectedVolatile)
	require.Equal(t, uint64(2), *later.ECC.UncorrectedAggregate)
	require.Equal(t, uint64(4), *after.PCIeReplays)
	require.Equal(t, &NVLinkErrorSums{}, before.NVLinkErrors, "links without errors")
	require.Equal(t, &NVLinkErrorSums{CRCFlit: 7, Replay: 3}, after.NVLinkErrors)
	// The power cap and thermal slowdown of the first step were held for
	// the step scripted GPUs enter on Advance; flaky has no throttle reasons.
	require.Equal(t, uint64(0), *after.Violations.PowerNs)

	fleet.Script(0, capped)
	fleet.Advance()
	throttled := sampleGPU(t, gpus, 0)
	require.Equal(t, uint64(time.Second), *throttled.Violations.PowerNs)
	require.Equal(t, uint64(time.Second), *throttled.Violations.ThermalNs)
	require.Equal(t, uint64(0), *throttled.Violations.SyncBoostNs)
	require.Equal(t, uint64(3*time.Second), *sampleGPU(t, gpus, 5).Violations.LowUtilNs, "an unscripted GPU idles through the three steps: its counters move too")
}

func TestSampleReportsALostGPU(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	for i := range 8 {
		fleet.Script(i, busy(50))
	}
	gpus := newTelemetry(t, fleet)
	_, err := gpus.Sample(SampleOptions{})
	require.NoError(t, err)

	fleet.GPUs[3].Lost = true // fell off the bus between two samples
	fleet.Advance()
	fleet.Device(5).GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) {
		return 0, gonvml.ERROR_GPU_IS_LOST // lost in the middle of its reading
	}
	s, err := gpus.Sample(SampleOptions{})
	require.NoError(t, err, "a lost GPU is reported on the GPU, not as an error")
	require.Len(t, s.GPUs, 8)
	for _, g := range s.GPUs {
		switch g.Index {
		case 3:
			require.True(t, g.Lost)
			require.Equal(t, "reading UUID: ERROR_GPU_IS_LOST", g.Error)
			require.Equal(t, "GPU-00000000-0000-4000-8000-000000000003", g.UUID, "named as last seen")
			require.Equal(t, "0000:4e:00.0", g.PCIBusID)
			require.Nil(t, g.MemoryUsedMiB)
		case 5:
			require.True(t, g.Lost)
			require.Equal(t, "reading temperature: ERROR_GPU_IS_LOST", g.Error)
			require.Equal(t, uint64(20480), *g.MemoryUsedMiB, "what was read before is kept")
			require.Nil(t, g.PowerDrawW, "nothing is read after")
		default:
			require.False(t, g.Lost, "GPU %d", g.Index)
			require.Empty(t, g.Error, "GPU %d", g.Index)
			require.Equal(t, uint32(50), *g.UtilizationGPU, "GPU %d", g.Index)
		}
	}
}

func TestSampleIndices(t *testing.T) {
	tests := []struct {
		description string
		indices     []int
		want        []int
		wantErr     string
	}{
		{description: "no indices read every GPU", want: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{description: "indices are read in order, each once", indices: []int{6, 1, 6}, want: []int{1, 6}},
		{description: "an index past the last GPU is an error", indices: []int{2, 8}, wantErr: "no GPU with index 8 on this machine: NVML counts 8 (indices 0-7)"},
		{description: "a negative index is an error", indices: []int{-1}, wantErr: "no GPU with index -1"},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			gpus := newTelemetry(t, nvmltest.NewDGXA100())
			s, err := gpus.Sample(SampleOptions{Indices: tc.indices})
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			var got []int
			for _, g := range s.GPUs {
				got = append(got, g.Index)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestSampleReadsThrottleReasonsFromTheOldCall(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.Device(0).GetCurrentClocksEventReasonsFunc = func() (uint64, gonvml.Return) {
		return 0, gonvml.ERROR_FUNCTION_NOT_FOUND // NVML from before the rename
	}
	fleet.GPUs[0].ThrottleReasons = gonvml.ClocksEventReasonSwThermalSlowdown
	gpus := newTelemetry(t, fleet)
	require.Equal(t, uint64(gonvml.ClocksEventReasonSwThermalSlowdown), *sampleGPU(t, gpus, 0).ThrottleReasons)
	require.Equal(t, uint64(gonvml.ClocksEventReasonSwThermalSlowdown), *sampleGPU(t, gpus, 0).ThrottleReasons)
}

func TestSampleWithoutDriver(t *testing.T) {
	gpus := New(Options{Lib: &mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_LIBRARY_NOT_FOUND }}, SysfsRoot: t.TempDir()})
	s, err := gpus.Sample(SampleOptions{})
	require.NoError(t, err)
	require.Equal(t, Driver{Loaded: false, Reason: "no NVIDIA driver loaded (libnvidia-ml.so.1 not found)"}, s.Driver)
	require.Empty(t, s.GPUs)
}

func TestSampleMIGDevices(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	gpus := newTelemetry(t, fleet)
	uuid := "GPU-00000000-0000-4000-8000-000000000000"
	_, err := gpus.SetMIGMode(uuid, true)
	require.NoError(t, err)
	require.NoError(t, gpus.ConfigureMIG(uuid, []string{"3g.20gb", "2g.10gb"}))
	fleet.GPUs[0].Processes = []gonvml.ProcessInfo{
		{Pid: 10, UsedGpuMemory: 512 * mib, GpuInstanceId: 1, ComputeInstanceId: 0},
		{Pid: 11, UsedGpuMemory: 256 * mib, GpuInstanceId: 0, ComputeInstanceId: 0},
	}

	t.Run("found by walking the instances, processes divided by instance", func(t *testing.T) {
		got := sampleGPU(t, gpus, 0).MIG
		require.Equal(t, []MIGSample{
			{MIGDevice: MIGDevice{Profile: "3g.20gb", GPUInstanceID: 0, ComputeInstanceID: 0, MemoryMiB: 19968}, Processes: []Process{{PID: 11, UsedMemoryMiB: 256}}},
			{MIGDevice: MIGDevice{Profile: "2g.10gb", GPUInstanceID: 1, ComputeInstanceID: 0, MemoryMiB: 9856}, Processes: []Process{{PID: 10, UsedMemoryMiB: 512}}},
		}, got)
		require.Nil(t, sampleGPU(t, gpus, 1).MIG, "MIG is off on the other GPUs")
	})

	t.Run("found through MIG device handles, with memory in use", func(t *testing.T) {
		handles := []gonvml.Device{
			migHandleMock(1, 0, "MIG-b", 10240*mib, 1024*mib, 3),
			nil, // an empty slot
			migHandleMock(0, 0, "MIG-a", 20480*mib, 0, 0),
		}
		d := fleet.Device(0)
		d.GetMaxMigDeviceCountFunc = func() (int, gonvml.Return) { return len(handles), gonvml.SUCCESS }
		d.GetMigDeviceHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
			if handles[i] == nil {
				return nil, gonvml.ERROR_NOT_FOUND
			}
			return handles[i], gonvml.SUCCESS
		}
		used := func(v uint64) *uint64 { return &v }
		require.Equal(t, []MIGSample{
			{MIGDevice: MIGDevice{Profile: "4g.20gb", GPUInstanceID: 0, ComputeInstanceID: 0, UUID: "MIG-a", MemoryMiB: 20480}, MemoryUsedMiB: used(0), Processes: []Process{}},
			{MIGDevice: MIGDevice{Profile: "2g.10gb", GPUInstanceID: 1, ComputeInstanceID: 0, UUID: "MIG-b", MemoryMiB: 10240}, MemoryUsedMiB: used(1024), Processes: []Process{{PID: 3, UsedMemoryMiB: 1024}}},
		}, sampleGPU(t, gpus, 0).MIG)
	})
}

// migHandleMock is a MIG device handle of GPU instance gi, compute instance
// ci, with one process of pid using all its used memory (none when pid is 0).
func migHandleMock(gi, ci int, uuid string, total, used uint64, pid uint32) *mock.Device {
	slices := uint32(total / (10240 * mib) * 2)
	return &mock.Device{
		GetGpuInstanceIdFunc:     func() (int, gonvml.Return) { return gi, gonvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, gonvml.Return) { return ci, gonvml.SUCCESS },
		GetUUIDFunc:              func() (string, gonvml.Return) { return uuid, gonvml.SUCCESS },
		GetAttributesFunc: func() (gonvml.DeviceAttributes, gonvml.Return) {
			return gonvml.DeviceAttributes{GpuInstanceSliceCount: slices, ComputeInstanceSliceCount: slices, MemorySizeMB: total / mib}, gonvml.SUCCESS
		},
		GetMemoryInfoFunc: func() (gonvml.Memory, gonvml.Return) {
			return gonvml.Memory{Total: total, Used: used, Free: total - used}, gonvml.SUCCESS
		},
		GetComputeRunningProcessesFunc: func() ([]gonvml.ProcessInfo, gonvml.Return) {
			if pid == 0 {
				return nil, gonvml.SUCCESS
			}
			return []gonvml.ProcessInfo{{Pid: pid, UsedGpuMemory: used}}, gonvml.SUCCESS
		},
	}
}

func TestSampleFromManyGoroutines(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	for i := range 8 {
		fleet.Script(i, busy(10, 20), busy(30))
	}
	gpus := newTelemetry(t, fleet)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			for range 5 {
				s, err := gpus.Sample(SampleOptions{})
				if err == nil && len(s.GPUs) != 8 {
					err = fmt.Errorf("a sample of %d GPUs, want 8", len(s.GPUs))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 5 {
			fleet.Advance()
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
