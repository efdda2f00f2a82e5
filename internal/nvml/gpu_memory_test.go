package nvml

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// The driver's reserve is not memory in use. On a real idle H100 (driver
// 580.159.04, scripts/real-nvml-check.sh) nvmlDeviceGetMemoryInfo said
// 480 MiB used where nvmlDeviceGetMemoryInfo_v2 and nvidia-smi said 0 MiB.
func TestMemoryInUseLeavesOutTheDriversReserve(t *testing.T) {
	reserve := uint64(480)
	tests := []struct {
		description  string
		withoutV2    bool
		wantUsed     uint64
		wantReserved *uint64
	}{
		{description: "a driver with nvmlDeviceGetMemoryInfo_v2 reports what processes use, as nvidia-smi does, and the reserve apart", wantUsed: 0, wantReserved: &reserve},
		{description: "a driver without it is read with v1, which counts the reserve as used and gives no reserve", withoutV2: true, wantUsed: 480},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			fleet := nvmltest.NewDGXA100()
			fleet.GPUs[3].ReservedMiB = 480
			if tt.withoutV2 {
				fleet.Device(3).GetMemoryInfo_v2Func = func() (gonvml.Memory_v2, gonvml.Return) {
					return gonvml.Memory_v2{}, gonvml.ERROR_FUNCTION_NOT_FOUND
				}
			}
			gpus := newTelemetry(t, fleet)

			snap, err := gpus.Snapshot()
			require.NoError(t, err)
			require.Equal(t, Memory{TotalMiB: 40960, UsedMiB: tt.wantUsed, FreeMiB: 40960 - 480, ReservedMiB: tt.wantReserved}, snap.Devices[3].Memory)

			s := sampleGPU(t, gpus, 3)
			require.Equal(t, tt.wantUsed, *s.MemoryUsedMiB)
			require.Equal(t, uint64(40960-480), *s.MemoryFreeMiB, "free memory is the same either way")
			require.Equal(t, tt.wantReserved, s.MemoryReservedMiB, "no reserve is a nil, not a 0")
		})
	}
}
