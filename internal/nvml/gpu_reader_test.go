package nvml

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

func TestALostGPUIsNotAskedAgain(t *testing.T) {
	const gpu = 2
	// fallsOff makes GPU 2 fall off the bus at one reading: that reading
	// and every later call on the GPU answer ERROR_GPU_IS_LOST. It records
	// in callsBefore how many calls the GPU had taken when it fell off.
	type fallsOff func(fleet *nvmltest.Fleet, callsBefore *uint64)
	lose := func(fleet *nvmltest.Fleet, callsBefore *uint64) gonvml.Return {
		fleet.GPUs[gpu].Lost = true
		*callsBefore = fleet.GPUCalls(gpu).Total
		return gonvml.ERROR_GPU_IS_LOST
	}
	readings := []struct {
		what  string
		error string
		at    fallsOff
	}{
		{
			what:  "power draw",
			error: "reading power draw: ERROR_GPU_IS_LOST",
			at: func(fleet *nvmltest.Fleet, n *uint64) {
				fleet.Device(gpu).GetPowerUsageFunc = func() (uint32, gonvml.Return) { return 0, lose(fleet, n) }
			},
		},
		{
			what:  "the first clock",
			error: "reading graphics clock: ERROR_GPU_IS_LOST",
			at: func(fleet *nvmltest.Fleet, n *uint64) {
				fleet.Device(gpu).GetClockInfoFunc = func(gonvml.ClockType) (uint32, gonvml.Return) { return 0, lose(fleet, n) }
			},
		},
		{
			what:  "the first ECC counter",
			error: "reading volatile uncorrected ECC errors: ERROR_GPU_IS_LOST",
			at: func(fleet *nvmltest.Fleet, n *uint64) {
				fleet.Device(gpu).GetTotalEccErrorsFunc = func(kind gonvml.MemoryErrorType, _ gonvml.EccCounterType) (uint64, gonvml.Return) {
					if kind == gonvml.MEMORY_ERROR_TYPE_CORRECTED {
						return 0, gonvml.SUCCESS // Sample reads the corrected counter first
					}
					return 0, lose(fleet, n)
				}
			},
		},
		{
			what:  "a MIG device",
			error: "reading MIG devices: ERROR_GPU_IS_LOST",
			at: func(fleet *nvmltest.Fleet, n *uint64) {
				d := fleet.Device(gpu)
				d.MigMode = gonvml.DEVICE_MIG_ENABLE
				d.GetMaxMigDeviceCountFunc = func() (int, gonvml.Return) { return 7, gonvml.SUCCESS }
				d.GetMigDeviceHandleByIndexFunc = func(int) (gonvml.Device, gonvml.Return) { return nil, lose(fleet, n) }
			},
		},
	}
	passes := []struct {
		name string
		read func(t *testing.T, gpus *GPUs) (lost bool, err string)
	}{
		{"Snapshot", func(t *testing.T, gpus *GPUs) (bool, string) {
			snap, err := gpus.Snapshot()
			require.NoError(t, err)
			return snap.Devices[gpu].Lost, snap.Devices[gpu].Error
		}},
		{"Sample", func(t *testing.T, gpus *GPUs) (bool, string) {
			g := sampleGPU(t, gpus, gpu)
			return g.Lost, g.Error
		}},
	}
	for _, pass := range passes {
		for _, r := range readings {
			t.Run(pass.name+" stops at "+r.what, func(t *testing.T) {
				fleet := nvmltest.NewDGXA100()
				var callsBefore uint64
				r.at(fleet, &callsBefore)
				gpus := newTelemetry(t, fleet)

				lost, errText := pass.read(t, gpus)
				require.True(t, lost)
				require.Equal(t, r.error, errText)
				require.Equal(t, callsBefore, fleet.GPUCalls(gpu).Total,
					"no NVML call on the GPU after it answered ERROR_GPU_IS_LOST; made: %v", fleet.GPUCalls(gpu).ByMethod)
			})
		}
	}
}

func TestSnapshotAndSampleAskOnceForWhatAGPUDoesNotSupport(t *testing.T) {
	// The double's GPUs answer ERROR_NOT_SUPPORTED to page retirement, as
	// an A100 does; Snapshot and Sample both read whether pages wait.
	const method = "GetRetiredPagesPendingStatus"
	fleet := nvmltest.NewDGXA100()
	gpus := newTelemetry(t, fleet)

	snap, err := gpus.Snapshot()
	require.NoError(t, err)
	require.Nil(t, snap.Devices[0].ECC.RetiredPagesPending)
	require.Equal(t, uint64(8), fleet.Calls().ByMethod[method], "asked once per GPU")

	_, err = gpus.Snapshot()
	require.NoError(t, err)
	s, err := gpus.Sample(SampleOptions{})
	require.NoError(t, err)
	require.Nil(t, s.GPUs[0].ECC.RetiredPending)
	require.Equal(t, uint64(8), fleet.Calls().ByMethod[method], "not asked again by a later Snapshot or Sample")
}
