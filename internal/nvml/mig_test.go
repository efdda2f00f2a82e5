package nvml

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/require"
)

func TestConfigureMIG(t *testing.T) {
	server := newDGXA100(t)
	gpus := New(Options{Lib: server, SysfsRoot: t.TempDir()})
	uuid := testUUID(0)

	err := gpus.ConfigureMIG(uuid, []string{"7g.40gb"})
	require.ErrorIs(t, err, errNotMIG)
	require.Contains(t, err.Error(), "GPU 0 ("+uuid+")")

	resetNeeded, err := gpus.SetMIGMode(uuid, true)
	require.NoError(t, err)
	require.False(t, resetNeeded, "the mock applies MIG mode at once")

	require.NoError(t, gpus.ConfigureMIG(uuid, []string{"1g.5gb", "3g.20gb", "1g.5gb", "2g.10gb"}))
	snap, err := gpus.Snapshot()
	require.NoError(t, err)
	mig := snap.Devices[0].MIG
	require.True(t, mig.Current)
	require.Equal(t, []MIGDevice{
		{Profile: "3g.20gb", GPUInstanceID: 0, ComputeInstanceID: 0, MemoryMiB: 19968},
		{Profile: "2g.10gb", GPUInstanceID: 1, ComputeInstanceID: 0, MemoryMiB: 9856},
		{Profile: "1g.5gb", GPUInstanceID: 2, ComputeInstanceID: 0, MemoryMiB: 4864},
		{Profile: "1g.5gb", GPUInstanceID: 3, ComputeInstanceID: 0, MemoryMiB: 4864},
	}, mig.Devices, "largest first, each with one full compute instance")
	require.Empty(t, snap.Devices[1].MIG.Devices, "other GPUs are untouched")

	err = gpus.ConfigureMIG(uuid, []string{"7g.40gb", "2g.20gb"})
	require.Error(t, err)
	require.Contains(t, err.Error(), `offers no MIG profile "2g.20gb"; it offers: 1g.5gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb, 1g.5gb+me, 1g.10gb`)
	snap, err = gpus.Snapshot()
	require.NoError(t, err)
	require.Len(t, snap.Devices[0].MIG.Devices, 4, "a bad profile list destroys nothing")

	require.NoError(t, gpus.ConfigureMIG(uuid, []string{"7g.40gb"}))
	snap, err = gpus.Snapshot()
	require.NoError(t, err)
	require.Equal(t, []MIGDevice{{Profile: "7g.40gb", GPUInstanceID: 4, ComputeInstanceID: 0, MemoryMiB: 40192}}, snap.Devices[0].MIG.Devices,
		"the old instances are replaced")
	require.Len(t, device(server, 0).GpuInstances, 1)

	require.NoError(t, gpus.ConfigureMIG(uuid, nil))
	require.Empty(t, device(server, 0).GpuInstances, "an empty list clears the GPU")
}

func TestConfigureMIGCleansUpAfterAFailedCreation(t *testing.T) {
	server := newDGXA100(t)
	d := device(server, 0)
	d.MigMode = gonvml.DEVICE_MIG_ENABLE
	create := d.CreateGpuInstanceFunc
	d.CreateGpuInstanceFunc = func(info *gonvml.GpuInstanceProfileInfo) (gonvml.GpuInstance, gonvml.Return) {
		if info.SliceCount == 4 {
			return nil, gonvml.ERROR_INSUFFICIENT_RESOURCES
		}
		return create(info)
	}
	gpus := New(Options{Lib: server, SysfsRoot: t.TempDir()})

	err := gpus.ConfigureMIG(testUUID(0), []string{"3g.20gb", "4g.20gb"})
	require.ErrorIs(t, err, gonvml.ERROR_INSUFFICIENT_RESOURCES)
	require.Contains(t, err.Error(), "creating MIG GPU instance 4g.20gb on GPU 0")
	require.Empty(t, d.GpuInstances, "the instances created before the failure are destroyed")
}

func TestSetMIGModePending(t *testing.T) {
	server := newDGXA100(t)
	d := device(server, 0)
	current, pending := gonvml.DEVICE_MIG_DISABLE, gonvml.DEVICE_MIG_DISABLE
	d.SetMigModeFunc = func(mode int) (gonvml.Return, gonvml.Return) {
		pending = mode // applied at the next GPU reset
		return gonvml.ERROR_RESET_REQUIRED, gonvml.SUCCESS
	}
	d.GetMigModeFunc = func() (int, int, gonvml.Return) { return current, pending, gonvml.SUCCESS }
	device(server, 1).SetMigModeFunc = func(int) (gonvml.Return, gonvml.Return) {
		return gonvml.SUCCESS, gonvml.ERROR_NO_PERMISSION
	}
	// GPU 2 is busy: NVML records the mode but cannot reset the GPU to apply it.
	device(server, 2).SetMigModeFunc = func(int) (gonvml.Return, gonvml.Return) {
		return gonvml.ERROR_IN_USE, gonvml.SUCCESS
	}
	gpus := New(Options{Lib: server, SysfsRoot: t.TempDir()})

	resetNeeded, err := gpus.SetMIGMode(testUUID(0), true)
	require.NoError(t, err)
	require.True(t, resetNeeded)
	snap, err := gpus.Snapshot()
	require.NoError(t, err)
	require.Equal(t, MIG{Supported: true, Current: false, Pending: true}, snap.Devices[0].MIG)

	resetNeeded, err = gpus.SetMIGMode(testUUID(2), true)
	require.NoError(t, err)
	require.True(t, resetNeeded, "an activation status other than SUCCESS means the change is pending")

	_, err = gpus.SetMIGMode(testUUID(1), true)
	require.ErrorIs(t, err, gonvml.ERROR_NO_PERMISSION)
	require.Contains(t, err.Error(), "enabling MIG mode on GPU 1 ("+testUUID(1)+"): ERROR_NO_PERMISSION: needs root")
}

func TestMIGDevicesThroughMIGHandles(t *testing.T) {
	// Without privilege NVML lists MIG devices through MIG device handles,
	// as `nvidia-smi -L` does; the snapshot prefers that path.
	server := newDGXA100(t)
	d := device(server, 0)
	d.MigMode = gonvml.DEVICE_MIG_ENABLE
	migDevice := func(gi, ci int, uuid string, giSlices, ciSlices uint32, memMiB uint64) *mock.Device {
		return &mock.Device{
			GetGpuInstanceIdFunc:     func() (int, gonvml.Return) { return gi, gonvml.SUCCESS },
			GetComputeInstanceIdFunc: func() (int, gonvml.Return) { return ci, gonvml.SUCCESS },
			GetUUIDFunc:              func() (string, gonvml.Return) { return uuid, gonvml.SUCCESS },
			GetAttributesFunc: func() (gonvml.DeviceAttributes, gonvml.Return) {
				return gonvml.DeviceAttributes{GpuInstanceSliceCount: giSlices, ComputeInstanceSliceCount: ciSlices, MemorySizeMB: memMiB}, gonvml.SUCCESS
			},
			GetMemoryInfoFunc: func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{Total: memMiB * mib}, gonvml.SUCCESS },
		}
	}
	handles := map[int]gonvml.Device{
		0: migDevice(1, 0, "MIG-11111111-1111-1111-1111-111111111111", 3, 3, 19968),
		3: migDevice(2, 0, "MIG-22222222-2222-2222-2222-222222222222", 3, 1, 19968),
	}
	d.GetMaxMigDeviceCountFunc = func() (int, gonvml.Return) { return 7, gonvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		if h, ok := handles[i]; ok {
			return h, gonvml.SUCCESS
		}
		return nil, gonvml.ERROR_NOT_FOUND
	}
	gpus := New(Options{Lib: server, SysfsRoot: t.TempDir()})

	snap, err := gpus.Snapshot()
	require.NoError(t, err)
	require.Equal(t, []MIGDevice{
		{Profile: "3g.20gb", GPUInstanceID: 1, ComputeInstanceID: 0, UUID: "MIG-11111111-1111-1111-1111-111111111111", MemoryMiB: 19968},
		{Profile: "1c.3g.20gb", GPUInstanceID: 2, ComputeInstanceID: 0, UUID: "MIG-22222222-2222-2222-2222-222222222222", MemoryMiB: 19968},
	}, snap.Devices[0].MIG.Devices)
}

func TestProfileNames(t *testing.T) {
	const gib = 1024 * mib
	tests := []struct {
		description string
		giProfileID int
		slices      uint32
		memoryMiB   uint64
		deviceBytes uint64
		want        string
	}{
		// A100 40GB: the dgxa100 mock's profile table.
		{"A100 40GB one slice", gonvml.GPU_INSTANCE_PROFILE_1_SLICE, 1, 4864, 40 * gib, "1g.5gb"},
		{"A100 40GB one slice with media extensions", gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, 1, 4864, 40 * gib, "1g.5gb+me"},
		{"A100 40GB one slice, double memory", gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, 1, 9856, 40 * gib, "1g.10gb"},
		{"A100 40GB two slices", gonvml.GPU_INSTANCE_PROFILE_2_SLICE, 2, 9856, 40 * gib, "2g.10gb"},
		{"A100 40GB three slices", gonvml.GPU_INSTANCE_PROFILE_3_SLICE, 3, 19968, 40 * gib, "3g.20gb"},
		{"A100 40GB four slices", gonvml.GPU_INSTANCE_PROFILE_4_SLICE, 4, 19968, 40 * gib, "4g.20gb"},
		{"A100 40GB whole GPU", gonvml.GPU_INSTANCE_PROFILE_7_SLICE, 7, 40192, 40 * gib, "7g.40gb"},
		// A100 80GB: go-nvml's mock/gpus/a100.go profile table (v0.13.4).
		{"A100 80GB one slice", gonvml.GPU_INSTANCE_PROFILE_1_SLICE, 1, 9856, 80 * gib, "1g.10gb"},
		{"A100 80GB one slice, double memory", gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, 1, 19968, 80 * gib, "1g.20gb"},
		{"A100 80GB two slices", gonvml.GPU_INSTANCE_PROFILE_2_SLICE, 2, 19968, 80 * gib, "2g.20gb"},
		{"A100 80GB three slices", gonvml.GPU_INSTANCE_PROFILE_3_SLICE, 3, 40192, 80 * gib, "3g.40gb"},
		{"A100 80GB four slices", gonvml.GPU_INSTANCE_PROFILE_4_SLICE, 4, 40192, 80 * gib, "4g.40gb"},
		{"A100 80GB whole GPU", gonvml.GPU_INSTANCE_PROFILE_7_SLICE, 7, 80384, 80 * gib, "7g.80gb"},
		// H100 80GB: go-nvml's mock/gpus/h100.go.
		{"H100 80GB one slice", gonvml.GPU_INSTANCE_PROFILE_1_SLICE, 1, 10240, 80 * gib, "1g.10gb"},
		{"H100 80GB three slices", gonvml.GPU_INSTANCE_PROFILE_3_SLICE, 3, 40960, 80 * gib, "3g.40gb"},
		{"a graphics profile", gonvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX, 2, 20480, 80 * gib, "2g.20gb+gfx"},
		{"a profile without media extensions", gonvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, 1, 10240, 80 * gib, "1g.10gb-me"},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			require.Equal(t, tc.want, profileName(tc.slices, tc.slices, tc.memoryMiB, tc.deviceBytes, profileSuffix(tc.giProfileID)))
		})
	}
	require.Equal(t, "1c.4g.20gb", profileName(4, 1, 19968, 40*gib, ""), "a compute instance smaller than its GPU instance")
}
