package nvml

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/require"
)

func TestSetPersistenceModeIsReadBack(t *testing.T) {
	server := newDGXA100(t)
	d := device(server, 4)
	state := gonvml.FEATURE_DISABLED
	d.GetPersistenceModeFunc = func() (gonvml.EnableState, gonvml.Return) { return state, gonvml.SUCCESS }
	d.SetPersistenceModeFunc = func(s gonvml.EnableState) gonvml.Return { state = s; return gonvml.SUCCESS }
	gpus := New(Options{Lib: server, SysfsRoot: t.TempDir()})

	before, err := gpus.Snapshot()
	require.NoError(t, err)
	require.False(t, *before.Devices[4].PersistenceMode)

	require.NoError(t, gpus.SetPersistenceMode(testUUID(4), true))
	after, err := gpus.Snapshot()
	require.NoError(t, err)
	require.True(t, *after.Devices[4].PersistenceMode)
	require.True(t, *after.Devices[3].PersistenceMode, "the other GPUs keep their own state")

	require.NoError(t, gpus.SetPersistenceMode(testUUID(4), false))
	again, err := gpus.Snapshot()
	require.NoError(t, err)
	require.False(t, *again.Devices[4].PersistenceMode)
}

func TestSetterErrors(t *testing.T) {
	server := newDGXA100(t)
	device(server, 1).SetPersistenceModeFunc = func(gonvml.EnableState) gonvml.Return { return gonvml.ERROR_NO_PERMISSION }
	device(server, 2).SetComputeModeFunc = func(gonvml.ComputeMode) gonvml.Return { return gonvml.ERROR_NOT_SUPPORTED }
	device(server, 3).SetApplicationsClocksFunc = func(uint32, uint32) gonvml.Return { return gonvml.ERROR_INVALID_ARGUMENT }
	gpus := New(Options{Lib: server, SysfsRoot: t.TempDir()})

	tests := []struct {
		description string
		call        func() error
		wantErr     string
		wantCode    gonvml.Return
	}{
		{
			description: "a UUID no GPU has is named",
			call:        func() error { return gpus.SetPersistenceMode("GPU-nope", true) },
			wantErr:     `no GPU with UUID "GPU-nope" on this machine`,
		},
		{
			description: "no permission is explained as needing root, with the GPU and the action",
			call:        func() error { return gpus.SetPersistenceMode(testUUID(1), true) },
			wantErr:     "setting persistence mode of GPU 1 (" + testUUID(1) + ") to on: ERROR_NO_PERMISSION: needs root",
			wantCode:    gonvml.ERROR_NO_PERMISSION,
		},
		{
			description: "an unsupported setting says so",
			call:        func() error { return gpus.SetComputeMode(testUUID(2), ComputeModeProhibited) },
			wantErr:     "setting compute mode of GPU 2 (" + testUUID(2) + ") to Prohibited: ERROR_NOT_SUPPORTED: this GPU does not support it",
			wantCode:    gonvml.ERROR_NOT_SUPPORTED,
		},
		{
			description: "an unknown compute mode lists the valid ones",
			call:        func() error { return gpus.SetComputeMode(testUUID(0), "exclusive") },
			wantErr:     `unknown compute mode "exclusive": use Default, Exclusive_Process or Prohibited`,
		},
		{
			description: "a clock pair the GPU rejects points at the supported list",
			call:        func() error { return gpus.SetApplicationClocks(testUUID(3), 1215, 9999) },
			wantErr:     "setting application clocks of GPU 3 (" + testUUID(3) + ") to 1215 MHz memory, 9999 MHz graphics: ERROR_INVALID_ARGUMENT: the GPU does not support this clock pair",
			wantCode:    gonvml.ERROR_INVALID_ARGUMENT,
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			err := tc.call()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.wantErr)
			if tc.wantCode != gonvml.SUCCESS {
				require.ErrorIs(t, err, tc.wantCode, "the NVML code stays inspectable")
			}
		})
	}
}

func TestSetComputeModeAndApplicationClocks(t *testing.T) {
	server := newDGXA100(t)
	var mode gonvml.ComputeMode
	var memMHz, gfxMHz uint32
	device(server, 0).SetComputeModeFunc = func(m gonvml.ComputeMode) gonvml.Return { mode = m; return gonvml.SUCCESS }
	device(server, 0).SetApplicationsClocksFunc = func(mem, gfx uint32) gonvml.Return {
		memMHz, gfxMHz = mem, gfx
		return gonvml.SUCCESS
	}
	gpus := New(Options{Lib: server, SysfsRoot: t.TempDir()})

	require.NoError(t, gpus.SetComputeMode(testUUID(0), ComputeModeExclusiveProcess))
	require.Equal(t, gonvml.COMPUTEMODE_EXCLUSIVE_PROCESS, mode)
	require.NoError(t, gpus.SetApplicationClocks(testUUID(0), 1215, 1410))
	require.Equal(t, uint32(1215), memMHz, "memory clock first, as nvmlDeviceSetApplicationsClocks takes it")
	require.Equal(t, uint32(1410), gfxMHz)
}

func TestSetPowerLimit(t *testing.T) {
	server := newDGXA100(t)
	var setMW []uint32
	device(server, 0).SetPowerManagementLimitFunc = func(mw uint32) gonvml.Return {
		setMW = append(setMW, mw)
		return gonvml.SUCCESS
	}
	device(server, 0).GetPowerManagementLimitConstraintsFunc = func() (uint32, uint32, gonvml.Return) {
		return 100000, 400000, gonvml.SUCCESS
	}
	gpus := New(Options{Lib: server, SysfsRoot: t.TempDir()})

	require.NoError(t, gpus.SetPowerLimit(testUUID(0), 300))
	require.Equal(t, []uint32{300000}, setMW, "NVML takes milliwatts")

	for _, watts := range []uint32{50, 99, 401, 5000} {
		err := gpus.SetPowerLimit(testUUID(0), watts)
		require.Error(t, err)
		require.Contains(t, err.Error(), "is outside the range of GPU 0 ("+testUUID(0)+"): 100–400 W")
	}
	require.Equal(t, []uint32{300000}, setMW, "an out-of-range limit never reaches NVML")

	require.NoError(t, gpus.SetPowerLimit(testUUID(0), 100), "the range is inclusive")
	require.NoError(t, gpus.SetPowerLimit(testUUID(0), 400))
}

func TestFormatWatts(t *testing.T) {
	require.Equal(t, "100", formatWatts(100000))
	require.Equal(t, "62.5", formatWatts(62500))
	require.Equal(t, "0.001", formatWatts(1))
}
