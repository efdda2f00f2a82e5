package nvml

// These tests hold the pieces of this package that github.com/NVIDIA/go-nvlib
// also implements to go-nvlib v0.13.0's behavior (pkg/nvlib/device and
// pkg/nvpci), with go-nvlib's code transcribed next to each case where it is
// a formula. Why go-nvlib is not imported: doc.go. Where this package differs
// on purpose, the case says so.

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/require"
)

// TestArchitectureNamesAsGoNVLib: device.GetArchitectureAsString.
func TestArchitectureNamesAsGoNVLib(t *testing.T) {
	for arch, want := range map[gonvml.DeviceArchitecture]string{
		gonvml.DEVICE_ARCH_KEPLER:    "Kepler",
		gonvml.DEVICE_ARCH_MAXWELL:   "Maxwell",
		gonvml.DEVICE_ARCH_PASCAL:    "Pascal",
		gonvml.DEVICE_ARCH_VOLTA:     "Volta",
		gonvml.DEVICE_ARCH_TURING:    "Turing",
		gonvml.DEVICE_ARCH_AMPERE:    "Ampere",
		gonvml.DEVICE_ARCH_ADA:       "Ada Lovelace",
		gonvml.DEVICE_ARCH_HOPPER:    "Hopper",
		gonvml.DEVICE_ARCH_BLACKWELL: "Blackwell",
		gonvml.DEVICE_ARCH_RUBIN:     "Rubin",
		gonvml.DEVICE_ARCH_UNKNOWN:   "Unknown",
		// go-nvlib returns an error for a value it does not know; a
		// snapshot reports it as "Unknown" rather than failing.
		11: "Unknown",
	} {
		require.Equal(t, want, architectureName(arch), "architecture %d", arch)
	}
}

// TestBusIDAsGoNVLib: device.GetPCIBusID lower-cases NVML's bus id and drops
// the leading "0000" of its eight-digit domain.
func TestBusIDAsGoNVLib(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:07:00.0": "0000:07:00.0",
		"00000000:BD:00.0": "0000:bd:00.0",
		"00001234:0F:1F.7": "1234:0f:1f.7",
		"0000:65:00.0":     "0000:65:00.0",
		// Different on purpose: go-nvlib keeps "00010000:…" as it is; the
		// kernel names the function "10000:…" (a VMD domain), and that is
		// the name the sysfs scan must match.
		"00010000:01:00.0": "10000:01:00.0",
	} {
		var pci gonvml.PciInfo
		copy(pci.BusId[:], toInt8(in))
		require.Equal(t, want, busIDFromPCIInfo(pci), in)
	}
}

func toInt8(s string) []int8 {
	out := make([]int8, len(s))
	for i := range len(s) {
		out[i] = int8(s[i])
	}
	return out
}

// goNVLibMigMemorySizeGB is go-nvlib v0.13.0's getMigMemorySizeGB
// (pkg/nvlib/device/mig_profile.go), verbatim.
func goNVLibMigMemorySizeGB(totalDeviceMemory, migMemorySizeMB uint64) uint64 {
	const fracDenominator = 8
	const oneMB = 1024 * 1024
	const oneGB = 1024 * 1024 * 1024
	fractionalGpuMem := (float64(migMemorySizeMB) * oneMB) / float64(totalDeviceMemory)
	fractionalGpuMem = math.Ceil(fractionalGpuMem*fracDenominator) / fracDenominator
	totalMemGB := float64((totalDeviceMemory + oneGB - 1) / oneGB)
	return uint64(math.Round(fractionalGpuMem * totalMemGB))
}

// TestMIGMemoryAsGoNVLib runs go-nvlib's TestGetMigMemorySizeGB table (24,
// 40 and 80 GiB devices, profile sizes in steps of 1/32 GiB) through
// migMemoryGB, then every profile size in MiB of the devices MIG runs on
// against the transcribed formula.
func TestMIGMemoryAsGoNVLib(t *testing.T) {
	const oneMB, oneGB = uint64(mib), uint64(1024 * mib)
	cases := 0
	for _, tdm := range []uint64{24 * oneGB, 40 * oneGB, 80 * oneGB} {
		sliceSize := tdm / 8
		for i := oneGB / 32; i <= tdm; i += oneGB / 32 {
			var want uint64
			for j := sliceSize; j <= tdm; j += sliceSize {
				if i <= j {
					want = j / oneGB
					break
				}
			}
			require.Equal(t, want, migMemoryGB(i/oneMB, tdm), "device %d GiB, profile %d MiB", tdm/oneGB, i/oneMB)
			cases++
		}
	}
	// Device memory as NVML reports it (total bytes) for A30, A100 40GB and
	// 80GB, H100 80GB/94GB, H200 141GB, GH200 96GB, B200.
	for _, totalMiB := range []uint64{24576, 40960, 40536, 81920, 81559, 95830, 97871, 143771, 183359} {
		total := totalMiB * oneMB
		for memMiB := uint64(1); memMiB <= totalMiB; memMiB++ {
			if got, want := migMemoryGB(memMiB, total), goNVLibMigMemorySizeGB(total, memMiB); got != want {
				require.Equal(t, want, got, "device %d MiB, profile %d MiB", totalMiB, memMiB)
			}
			cases++
		}
	}
	t.Logf("%d sizes agree", cases)
}

// TestMIGProfileNamesAsGoNVLib: MigProfileInfo.String and the attributes
// NewMigProfile gives each GPU instance profile id.
func TestMIGProfileNamesAsGoNVLib(t *testing.T) {
	const a100 = 40 * 1024 * 1024 * 1024
	for _, c := range []struct {
		gi, ci uint32
		memMiB uint64
		suffix string
		want   string
	}{
		{1, 1, 4864, "", "1g.5gb"},
		{1, 0, 4864, "", "1g.5gb"},
		{1, 1, 4864, "+me", "1g.5gb+me"},
		{2, 1, 9856, "", "1c.2g.10gb"},
		{7, 3, 40192, "", "3c.7g.40gb"},
		{1, 1, 4864, "+me.all", "1g.5gb+me.all"},
		{1, 1, 4864, "-me", "1g.5gb-me"},
		{4, 4, 19968, "+gfx", "4g.20gb+gfx"},
	} {
		require.Equal(t, c.want, profileName(c.gi, c.ci, c.memMiB, a100, c.suffix))
	}
	for id, want := range map[int]string{
		gonvml.GPU_INSTANCE_PROFILE_1_SLICE:        "",
		gonvml.GPU_INSTANCE_PROFILE_7_SLICE:        "",
		gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1:   "+me",
		gonvml.GPU_INSTANCE_PROFILE_2_SLICE_REV1:   "+me",
		gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2:   "",
		gonvml.GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME: "+me.all",
		gonvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME: "+me.all",
		gonvml.GPU_INSTANCE_PROFILE_1_SLICE_GFX:    "+gfx",
		gonvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX:    "+gfx",
		gonvml.GPU_INSTANCE_PROFILE_4_SLICE_GFX:    "+gfx",
		gonvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME:  "-me",
		gonvml.GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:  "-me",
		// go-nvlib has no case for 3_SLICE_GFX (NewMigProfile refuses the
		// id); it is a graphics profile like its 1, 2 and 4 slice siblings.
		gonvml.GPU_INSTANCE_PROFILE_3_SLICE_GFX: "+gfx",
	} {
		require.Equal(t, want, profileSuffix(id), "GPU instance profile id %d", id)
	}
}

// TestPCIScanAsGoNVLib: nvpci.GetGPUs keeps NVIDIA functions of class
// exactly 0x030000 or 0x030200 that are not SR-IOV virtual functions, and
// sorts them by address read as a number.
func TestPCIScanAsGoNVLib(t *testing.T) {
	root := t.TempDir()
	writeSysfs(t, root,
		pciFunction{address: "10000:01:00.0", vendor: "0x10de", device: "0x2330", class: "0x030200", driver: "nvidia", numaNode: "0"},
		pciFunction{address: "0000:c1:00.0", vendor: "0x10de", device: "0x20b0", class: "0x030200", driver: "nvidia", numaNode: "1"},
		// A vGPU host: the GPU's SR-IOV virtual functions are 3D controllers
		// too, but not GPUs of their own.
		pciFunction{address: "0000:c1:00.4", vendor: "0x10de", device: "0x20b0", class: "0x030200", driver: "nvidia", numaNode: "1", physfn: "0000:c1:00.0"},
		pciFunction{address: "0000:c1:00.5", vendor: "0x10de", device: "0x20b0", class: "0x030200", numaNode: "1", physfn: "0000:c1:00.0"},
		// A prog-if other than 00 is not a GPU class to go-nvlib.
		pciFunction{address: "0000:02:00.0", vendor: "0x10de", device: "0x2204", class: "0x030001"},
		// Mellanox (0x15b3) functions are NVIDIA devices to go-nvlib, not GPUs.
		pciFunction{address: "0000:03:00.0", vendor: "0x15b3", device: "0x101d", class: "0x020000"},
		pciFunction{address: "0000:09:00.0", vendor: "0x10DE", device: "0x20B0", class: "0x030200"},
		// Hyper-V (Azure) gives passed-through GPUs a domain from the VM
		// bus's GUID: 4e5c sorts before the five-digit 10000 as a number.
		pciFunction{address: "4e5c:00:00.0", vendor: "0x10de", device: "0x2331", class: "0x030200", driver: "nvidia", numaNode: "0"},
	)
	devices, err := readPCIDevices(root)
	require.NoError(t, err)
	var got []string
	for _, d := range devices {
		got = append(got, fmt.Sprintf("%s %s %s %s %d", d.Address, d.DeviceID, d.Class, d.Driver, d.NUMANode))
	}
	require.Equal(t, []string{
		"0000:09:00.0 20b0 0302  -1",
		"0000:c1:00.0 20b0 0302 nvidia 1",
		"4e5c:00:00.0 2331 0302 nvidia 0",
		"10000:01:00.0 2330 0302 nvidia 0",
	}, got, "sysfs under %s", filepath.Join(root, "bus/pci/devices"))
	require.False(t, strings.Contains(strings.Join(got, "\n"), "c1:00.4"))
}
