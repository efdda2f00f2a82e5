package nvdra

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
)

// gpuOn returns GPU n of instance type name with the identities a test gives.
func gpuOn(t *testing.T, name string, minor int, uuid, bus, root string) GPU {
	t.Helper()
	it, ok := ec2catalog.Lookup(name)
	require.True(t, ok, name)
	g, err := GPUOf(it)
	require.NoError(t, err)
	g.Minor, g.UUID, g.PCIeBusID, g.PCIeRoot = minor, uuid, bus, root
	return g
}

func TestGPUDeviceIsWhatThePluginPublishesForAnH100(t *testing.T) {
	g := gpuOn(t, "p5.48xlarge", 3, "GPU-4f9d1c2e-0b6a-5e1f-9a3c-7d2e8b1f6a40", "0000:86:00.0", "pci0000:80")
	device, err := g.Device()
	require.NoError(t, err)
	got, err := yaml.Marshal(device)
	require.NoError(t, err)
	// GpuInfo.GetDevice at v25.8.1 for an H100 SXM5 80GB under driver
	// 550.54.15 (CUDA 12.4): NVML's name and its 81559 MiB.
	require.Equal(t, strings.TrimLeft(`
attributes:
  architecture:
    string: Hopper
  brand:
    string: Nvidia
  cudaComputeCapability:
    version: 9.0.0
  cudaDriverVersion:
    version: 12.4.0
  driverVersion:
    version: 550.54.15
  pcieBusID:
    string: 0000:86:00.0
  productName:
    string: NVIDIA H100 80GB HBM3
  resource.kubernetes.io/pcieRoot:
    string: pci0000:80
  type:
    string: gpu
  uuid:
    string: GPU-4f9d1c2e-0b6a-5e1f-9a3c-7d2e8b1f6a40
capacity:
  memory:
    value: 81559Mi
name: gpu-3
`, "\n"), string(got))
}

func TestGPUDeviceOfAnA100WithoutPCIeRootOmitsTheAttribute(t *testing.T) {
	g := gpuOn(t, "p4d.24xlarge", 0, "GPU-0", "0000:10:1c.0", "")
	device, err := g.Device()
	require.NoError(t, err)
	require.Equal(t, "gpu-0", device.Name)
	require.Equal(t, "NVIDIA A100-SXM4-40GB", *device.Attributes[AttrProductName].StringValue)
	require.Equal(t, "Ampere", *device.Attributes[AttrArchitecture].StringValue)
	require.Equal(t, "8.0.0", *device.Attributes[AttrCUDAComputeCapability].VersionValue)
	memory := device.Capacity[CapacityMemory].Value
	require.Equal(t, "40Gi", memory.String())
	require.NotContains(t, device.Attributes, AttrPCIeRoot)
}

func TestMIGDeviceIsWhatThePluginPublishesForA1g5gbOnAnA100(t *testing.T) {
	parent := gpuOn(t, "p4d.24xlarge", 2, "GPU-parent", "0000:20:1c.0", "pci0000:20")
	placed, err := PlaceMIGDevices(parent.ProductName, []string{"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"})
	require.NoError(t, err)
	m := MIGDevice{Parent: parent, UUID: "MIG-child", Profile: placed[3].Profile, PlacementStart: placed[3].Start}
	device, err := m.Device()
	require.NoError(t, err)
	got, err := yaml.Marshal(device)
	require.NoError(t, err)
	// MigDeviceInfo.GetDevice at v25.8.1: GPU instance profile 19 at
	// memory slice 3 of 8; 4.75 GiB and 14 SMs (MIG user guide, A100).
	require.Equal(t, strings.TrimLeft(`
attributes:
  architecture:
    string: Ampere
  brand:
    string: Nvidia
  cudaComputeCapability:
    version: 8.0.0
  cudaDriverVersion:
    version: 12.4.0
  driverVersion:
    version: 550.54.15
  parentUUID:
    string: GPU-parent
  pcieBusID:
    string: 0000:20:1c.0
  productName:
    string: NVIDIA A100-SXM4-40GB
  profile:
    string: 1g.5gb
  resource.kubernetes.io/pcieRoot:
    string: pci0000:20
  type:
    string: mig
  uuid:
    string: MIG-child
capacity:
  copyEngines:
    value: "1"
  decoders:
    value: "0"
  encoders:
    value: "0"
  jpegEngines:
    value: "0"
  memory:
    value: 4864Mi
  memorySlice3:
    value: "1"
  multiprocessors:
    value: "14"
  ofaEngines:
    value: "0"
name: gpu-2-mig-19-3-1
`, "\n"), string(got))
}

func TestMIGDeviceOfA3g40gbOnAnH100HoldsFourMemorySlices(t *testing.T) {
	parent := gpuOn(t, "p5.48xlarge", 0, "GPU-p", "0000:53:00.0", "")
	placed, err := PlaceMIGDevices(parent.ProductName, []string{"3g.40gb", "3g.40gb"})
	require.NoError(t, err)
	m := MIGDevice{Parent: parent, UUID: "MIG-x", Profile: placed[1].Profile, PlacementStart: placed[1].Start}
	device, err := m.Device()
	require.NoError(t, err)
	require.Equal(t, "gpu-0-mig-9-4-4", device.Name)
	var slices []string
	for name := range device.Capacity {
		if strings.HasPrefix(string(name), CapacityMemorySlicePrefix) {
			slices = append(slices, string(name))
		}
	}
	require.ElementsMatch(t, []string{"memorySlice4", "memorySlice5", "memorySlice6", "memorySlice7"}, slices)
	sms := device.Capacity[CapacityMultiprocessors].Value
	require.Equal(t, "60", sms.String())
}

func TestPlaceMIGDevices(t *testing.T) {
	for _, tc := range []struct {
		description string
		product     string
		profiles    []string
		wantStarts  []int
		wantErr     string
	}{
		{description: "seven 1g.10gb fill an H100's seven 1-slice placements", product: "NVIDIA H100 80GB HBM3",
			profiles: []string{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}, wantStarts: []int{0, 1, 2, 3, 4, 5, 6}},
		{description: "an eighth 1g.10gb is more than an H100 takes", product: "NVIDIA H100 80GB HBM3",
			profiles: []string{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}, wantErr: "at most 7 MIG devices of profile 1g.10gb, not 8"},
		{description: "a 3g.20gb takes the first free 4-slice placement after a 1g.5gb", product: "NVIDIA A100-SXM4-40GB",
			profiles: []string{"1g.5gb", "3g.20gb", "2g.10gb"}, wantStarts: []int{0, 4, 2}},
		{description: "a 3g.20gb moves to slice 4 when the rest cannot fit after it at 0", product: "NVIDIA A100-SXM4-40GB",
			profiles: []string{"3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"}, wantStarts: []int{4, 0, 2, 3}},
		{description: "a second 3g.20gb does not fit beside a 4g.20gb", product: "NVIDIA A100-SXM4-40GB",
			profiles: []string{"4g.20gb", "3g.20gb", "3g.20gb"}, wantErr: "do not fit together"},
		{description: "one +me device per GPU", product: "NVIDIA A100-SXM4-40GB",
			profiles: []string{"1g.5gb+me", "1g.5gb+me"}, wantErr: "at most 1"},
		{description: "an H100 profile on an A100 is unknown", product: "NVIDIA A100-SXM4-40GB",
			profiles: []string{"1g.10gb+me"}, wantErr: `no MIG profile "1g.10gb+me"`},
		{description: "a GPU without a table is refused", product: "NVIDIA L4",
			profiles: []string{"1g.10gb"}, wantErr: "no MIG profile table for NVIDIA L4"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			placed, err := PlaceMIGDevices(tc.product, tc.profiles)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			starts := make([]int, len(placed))
			for i, p := range placed {
				starts[i] = p.Start
			}
			require.Equal(t, tc.wantStarts, starts)
		})
	}
}

func TestEveryNVIDIAInstanceTypeHasTheFactsThePluginPublishes(t *testing.T) {
	for _, it := range ec2catalog.All() {
		if !it.HasGPU() {
			_, err := GPUOf(it)
			require.Error(t, err, it.Name)
			continue
		}
		g, err := GPUOf(it)
		require.NoError(t, err, it.Name)
		// GFD's label is NVML's name with spaces replaced by dashes.
		require.Equal(t, it.GPUProduct, strings.ReplaceAll(g.ProductName, " ", "-"), it.Name)
		g.UUID, g.PCIeBusID = "GPU-x", "0000:01:00.0"
		_, err = g.Device()
		require.NoError(t, err, it.Name)
	}
}

func TestSemverStringNormalizesAsThePluginsSemverDoes(t *testing.T) {
	for in, want := range map[string]string{"12.4": "12.4.0", "9.0": "9.0.0", "550.54.15": "550.54.15", "580.95.05": "580.95.5", "13": "13.0.0"} {
		got, err := semverString(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "12.x", "1.2.3.4"} {
		_, err := semverString(bad)
		require.Error(t, err, bad)
	}
}
