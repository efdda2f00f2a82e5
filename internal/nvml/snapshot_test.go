package nvml

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func TestSnapshotDGXA100(t *testing.T) {
	gpus := New(Options{Lib: newDGXA100(t), SysfsRoot: dgxSysfs(t)})
	defer gpus.Close()

	snap, err := gpus.Snapshot()
	require.NoError(t, err)

	require.Equal(t, Driver{Loaded: true, Version: "550.54.15", CUDAVersion: "12.4", NVMLVersion: "12.550.54.15"}, snap.Driver)
	require.Equal(t, "550", snap.Driver.Branch())
	require.Len(t, snap.Devices, 8)
	wantBusIDs := []string{
		"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0",
		"0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0",
	}
	for i, d := range snap.Devices {
		require.Equal(t, i, d.Index)
		require.Equal(t, testUUID(i), d.UUID)
		require.Equal(t, "Mock NVIDIA A100-SXM4-40GB", d.Name)
		require.Equal(t, wantBusIDs[i], d.PCIBusID, "bus ids are spelled as sysfs spells them")
		require.Equal(t, "Ampere", d.Architecture)
		require.Equal(t, "8.0", d.ComputeCapability)
		require.Equal(t, Memory{TotalMiB: 40960, UsedMiB: 0, FreeMiB: 40960}, d.Memory)
		require.Equal(t, 400.0, *d.PowerLimitW)
		require.Equal(t, 55.123, *d.PowerDrawW)
		require.True(t, *d.PersistenceMode)
		require.Equal(t, ComputeModeDefault, d.ComputeMode)
		require.Equal(t, MIG{Supported: true}, d.MIG)
		require.Nil(t, d.ECC.RetiredPagesPending, "a reading the GPU does not support stays nil")
		require.False(t, d.Lost)
		require.Empty(t, d.Error)
		require.Equal(t, wantBusIDs[i], snap.PCI[i].Address, "sysfs and NVML agree on the address")
	}
	require.Equal(t, []Process{{PID: 4242, Name: "python3", UsedMemoryMiB: 1024}}, snap.Devices[3].Processes)
	require.Len(t, snap.Topology, 28, "every pair of 8 GPUs")
	for _, link := range snap.Topology {
		require.Equal(t, "NV12", link.Level, "GPUs %d and %d reach each other over 12 NVSwitch links", link.GPU1, link.GPU2)
	}

	got, err := json.MarshalIndent(snap, "", "  ")
	require.NoError(t, err)
	golden := filepath.Join("testdata", "dgxa100.golden.json")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, append(got, '\n'), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run `go test ./internal/nvml -update` to create it")
	require.JSONEq(t, string(want), string(got))
}

func TestSnapshotWithoutDriver(t *testing.T) {
	root := t.TempDir()
	writeSysfs(t, root,
		pciFunction{address: "0000:41:00.0", vendor: "0x10de", device: "0x2330", class: "0x030200", driver: "vfio-pci", numaNode: "0"},
		pciFunction{address: "0000:c1:00.0", vendor: "0x10de", device: "0x2330", class: "0x030200", numaNode: "1"},
		pciFunction{address: "0000:00:02.0", vendor: "0x8086", device: "0x3e92", class: "0x030000", driver: "i915", numaNode: "0"},
	)
	wantPCI := []PCIDevice{
		{Address: "0000:41:00.0", DeviceID: "2330", Class: "0302", Driver: "vfio-pci", NUMANode: 0},
		{Address: "0000:c1:00.0", DeviceID: "2330", Class: "0302", Driver: "", NUMANode: 1},
	}
	tests := []struct {
		description string
		initRet     gonvml.Return
		wantReason  string
	}{
		{
			description: "no libnvidia-ml.so.1 means no driver installed",
			initRet:     gonvml.ERROR_LIBRARY_NOT_FOUND,
			wantReason:  "no NVIDIA driver loaded (libnvidia-ml.so.1 not found)",
		},
		{
			description: "the library without the kernel module",
			initRet:     gonvml.ERROR_DRIVER_NOT_LOADED,
			wantReason:  "NVIDIA driver not loaded (kernel module missing)",
		},
		{
			description: "any other Init failure is reported with NVML's words",
			initRet:     gonvml.ERROR_UNKNOWN,
			wantReason:  "NVML initialisation failed: ERROR_UNKNOWN",
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			lib := &mock.Interface{InitFunc: func() gonvml.Return { return tc.initRet }}
			gpus := New(Options{Lib: lib, SysfsRoot: root})

			snap, err := gpus.Snapshot()
			require.NoError(t, err)
			require.Equal(t, Driver{Loaded: false, Reason: tc.wantReason}, snap.Driver)
			require.Empty(t, snap.Devices)
			require.Equal(t, wantPCI, snap.PCI, "the NVIDIA functions, bound or not, and nothing else")

			require.ErrorIs(t, gpus.SetPersistenceMode(testUUID(0), true), ErrNoDriver)
			_, err = gpus.SetMIGMode(testUUID(0), true)
			require.ErrorIs(t, err, ErrNoDriver)
			require.NoError(t, gpus.Close(), "closing a library that never initialized")
		})
	}
}

func TestSnapshotRetriesInitAfterNoDriver(t *testing.T) {
	server := newDGXA100(t)
	driverInstalled := false
	inits := 0
	server.InitFunc = func() gonvml.Return {
		inits++
		if !driverInstalled {
			return gonvml.ERROR_LIBRARY_NOT_FOUND
		}
		return gonvml.SUCCESS
	}
	gpus := New(Options{Lib: server, SysfsRoot: t.TempDir()})

	snap, err := gpus.Snapshot()
	require.NoError(t, err)
	require.False(t, snap.Driver.Loaded)

	driverInstalled = true
	snap, err = gpus.Snapshot()
	require.NoError(t, err)
	require.True(t, snap.Driver.Loaded, "a driver installed after the first snapshot is found")
	require.Len(t, snap.Devices, 8)

	_, err = gpus.Snapshot()
	require.NoError(t, err)
	require.Equal(t, 2, inits, "once NVML is up it is not initialized again")
}

func TestSnapshotMixedHealth(t *testing.T) {
	server := newDGXA100(t)
	// GPU 2: uncorrectable ECC errors and a row remapping waiting for a reset.
	device(server, 2).GetTotalEccErrorsFunc = func(kind gonvml.MemoryErrorType, counter gonvml.EccCounterType) (uint64, gonvml.Return) {
		if kind == gonvml.MEMORY_ERROR_TYPE_UNCORRECTED && counter == gonvml.VOLATILE_ECC {
			return 3, gonvml.SUCCESS
		}
		return 0, gonvml.SUCCESS
	}
	device(server, 2).GetRemappedRowsFunc = func() (int, int, bool, bool, gonvml.Return) { return 0, 1, true, false, gonvml.SUCCESS }
	// GPU 5 fell off the bus: identity calls fail.
	device(server, 5).GetUUIDFunc = func() (string, gonvml.Return) { return "", gonvml.ERROR_GPU_IS_LOST }
	// GPU 6 is so lost NVML hands out no handle.
	getHandle := server.DeviceGetHandleByIndexFunc
	server.DeviceGetHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		if i == 6 {
			return nil, gonvml.ERROR_GPU_IS_LOST
		}
		return getHandle(i)
	}
	gpus := New(Options{Lib: server, SysfsRoot: t.TempDir()})

	snap, err := gpus.Snapshot()
	require.NoError(t, err, "unhealthy GPUs do not fail the snapshot")
	require.Len(t, snap.Devices, 8, "every GPU is listed, healthy or not")

	ecc := snap.Devices[2].ECC
	require.Equal(t, uint64(3), *ecc.VolatileUncorrected)
	require.True(t, *ecc.RemappedRowsPending)
	require.False(t, *ecc.RemappedRowsFailure)
	require.False(t, snap.Devices[2].Lost)

	lost := snap.Devices[5]
	require.True(t, lost.Lost)
	require.Equal(t, "reading UUID: ERROR_GPU_IS_LOST", lost.Error)
	require.Equal(t, "0000:90:00.0", lost.PCIBusID, "what was read before the failure is kept, so the GPU can be found")
	require.Nil(t, lost.TemperatureC, "nothing is read after the failure")

	require.Equal(t, Device{Index: 6, Processes: []Process{}, Lost: true, Error: "getting the device handle: ERROR_GPU_IS_LOST"}, snap.Devices[6])

	for _, i := range []int{0, 1, 3, 4, 7} {
		require.Empty(t, snap.Devices[i].Error)
		require.Equal(t, testUUID(i), snap.Devices[i].UUID)
		require.Equal(t, uint64(0), *snap.Devices[i].ECC.VolatileUncorrected)
	}
	require.Len(t, snap.Topology, 15, "pairs among the 6 readable GPUs")
	for _, link := range snap.Topology {
		require.NotContains(t, []int{5, 6}, link.GPU1)
		require.NotContains(t, []int{5, 6}, link.GPU2)
	}
}

func TestSnapshotOfABareMock(t *testing.T) {
	// go-nvml's dgxa100 mock as it comes: most Func fields nil. Calls it does
	// not implement read as "not supported" instead of panicking.
	gpus := New(Options{Lib: dgxa100.New(), SysfsRoot: t.TempDir()})

	snap, err := gpus.Snapshot()
	require.NoError(t, err)
	require.True(t, snap.Driver.Loaded)
	require.Len(t, snap.Devices, 8)
	d := snap.Devices[0]
	require.Regexp(t, `^GPU-[0-9a-f-]{36}$`, d.UUID)
	require.Equal(t, "Ampere", d.Architecture)
	require.Nil(t, d.PersistenceMode)
	require.Nil(t, d.TemperatureC)
	require.Nil(t, d.ECC.Enabled)
	require.Empty(t, d.Error, "missing optional readings are not errors")
	require.Empty(t, snap.Topology)
	require.NoError(t, gpus.Close(), "Shutdown is implemented by the mock")
}

func TestSnapshotOfTheNvmltestFleet(t *testing.T) {
	// The fixture the bootstrap's tests use: every call it does not model
	// answers ERROR_NOT_SUPPORTED.
	fleet := nvmltest.NewDGXA100()
	fleet.GPUs[1].VolatileECC = 2
	fleet.GPUs[4].Lost = true
	gpus := New(Options{Lib: fleet.Server, SysfsRoot: t.TempDir()})

	snap, err := gpus.Snapshot()
	require.NoError(t, err)
	require.Len(t, snap.Devices, 8)
	require.Equal(t, uint64(2), *snap.Devices[1].ECC.VolatileUncorrected)
	require.True(t, snap.Devices[4].Lost)
	require.False(t, *snap.Devices[0].PersistenceMode)
	require.Equal(t, 400.0, *snap.Devices[0].PowerLimitW)
	require.Equal(t, "PXB", snap.Topology[0].Level, "GPUs 0 and 1 share a PCIe switch")

	uuid := snap.Devices[0].UUID
	require.NoError(t, gpus.SetPersistenceMode(uuid, true))
	require.True(t, fleet.GPUs[0].Persistence)
	require.NoError(t, gpus.SetPowerLimit(uuid, 300))
	require.Equal(t, uint32(300000), fleet.GPUs[0].PowerLimitMW)
}

func TestNormalizeBusID(t *testing.T) {
	tests := []struct{ in, want string }{
		{"00000000:0F:00.0", "0000:0f:00.0"},
		{"0000:0f:00.0", "0000:0f:00.0"},
		{"00010000:C1:00.0", "10000:c1:00.0"},
		{"", ""},
		{"garbage", "garbage"},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, normalizeBusID(tc.in), tc.in)
	}
}

func TestCUDAVersion(t *testing.T) {
	require.Equal(t, "12.4", cudaVersion(12040))
	require.Equal(t, "11.8", cudaVersion(11080))
	require.Equal(t, "13.0", cudaVersion(13000))
}
