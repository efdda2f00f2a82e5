package proxmox

import (
	"testing"

	pxapi "github.com/Telmate/proxmox-api-go/proxmox"
	"github.com/stretchr/testify/require"
)

func TestHostPCIValue(t *testing.T) {
	tests := []struct {
		description string
		gpu         GPU
		want        string
	}{
		{"a mapping with pcie writes rombar=1 explicitly", GPU{Mapping: "a6000-0", PCIE: true, ROMBar: true}, "mapping=a6000-0,pcie=1,rombar=1"},
		{"a raw address with all functions drops the function and keeps x-vga", GPU{PCIAddress: "0000:01:00.0", AllFunctions: true, PCIE: true, PrimaryGPU: true, ROMBar: true}, "0000:01:00,pcie=1,x-vga=1,rombar=1"},
		{"a raw function without all functions keeps the function", GPU{PCIAddress: "0000:41:00.0", ROMBar: true}, "0000:41:00.0,rombar=1"},
		{"rombar off is written as rombar=0", GPU{Mapping: "a6000-1", PCIE: true}, "mapping=a6000-1,pcie=1,rombar=0"},
		{"an mdev type goes along", GPU{Mapping: "l40s-vgpu", Mdev: "nvidia-1155", PCIE: true, ROMBar: true}, "mapping=l40s-vgpu,mdev=nvidia-1155,pcie=1,rombar=1"},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			require.Equal(t, tc.want, HostPCIValue(tc.gpu))
		})
	}
}

func TestParseHostPCI_roundTrip(t *testing.T) {
	gpus := []GPU{
		{Mapping: "a6000-0", PCIE: true, ROMBar: true, AllFunctions: true},
		{PCIAddress: "0000:01:00", PCIE: true, PrimaryGPU: true, ROMBar: true, AllFunctions: true},
		{PCIAddress: "0000:41:00.0", ROMBar: false},
		{Mapping: "l40s-vgpu", Mdev: "nvidia-1155", PCIE: true, ROMBar: true, AllFunctions: true},
	}
	for _, g := range gpus {
		back, err := ParseHostPCI(HostPCIValue(g))
		require.NoError(t, err)
		require.Equal(t, g, back, HostPCIValue(g))
	}
}

func TestParseHostPCI_pveForms(t *testing.T) {
	// PVE's defaults where a key is absent (rombar=1), "host=" spelled out,
	// and an id without the domain.
	g, err := ParseHostPCI("host=01:00.0,pcie=1")
	require.NoError(t, err)
	require.Equal(t, GPU{PCIAddress: "0000:01:00.0", PCIE: true, ROMBar: true}, g)

	_, err = ParseHostPCI("pcie=1,rombar=1")
	require.ErrorContains(t, err, "neither a mapping nor a host PCI address")
}

func TestLibraryPCI_neverNilROMbar(t *testing.T) {
	// This library version writes rombar=0 for a nil ROMbar: every pointer
	// we hand it is set, and carries what was asked.
	for _, rombar := range []bool{true, false} {
		m := libraryPCI(GPU{Mapping: "a6000-0", ROMBar: rombar})
		require.NotNil(t, m.Mapping)
		require.NotNil(t, m.Mapping.ROMbar)
		require.Equal(t, rombar, *m.Mapping.ROMbar)
		require.NotNil(t, m.Mapping.PCIe)
		require.NotNil(t, m.Mapping.PrimaryGPU)

		r := libraryPCI(GPU{PCIAddress: "0000:01:00.0", AllFunctions: true, ROMBar: rombar})
		require.NotNil(t, r.Raw)
		require.NotNil(t, r.Raw.ROMbar)
		require.Equal(t, rombar, *r.Raw.ROMbar)
		require.Equal(t, "0000:01:00", r.Raw.ID.String())
	}
	require.Contains(t, HostPCIValue(GPU{Mapping: "a6000-0", ROMBar: true}), ",rombar=1")
}

func TestValidateGPUs(t *testing.T) {
	tests := []struct {
		description string
		gpus        []GPU
		wantErr     string
		wantField   Field
	}{
		{"a mapping and a raw address are accepted", []GPU{{Mapping: "a6000-0"}, {PCIAddress: "0000:02:00.0"}}, "", Field{}},
		{"both a mapping and an address is refused", []GPU{{Mapping: "a6000-0", PCIAddress: "0000:01:00.0"}},
			"hostpci0: needs exactly one of a PCI mapping and a host PCI address", GPUField(FieldGPU, 0)},
		{"neither is refused", []GPU{{Mapping: "a6000-0"}, {}}, "hostpci1: needs exactly one", GPUField(FieldGPU, 1)},
		{"a malformed address is refused by the library's validator", []GPU{{PCIAddress: "01:00.0"}}, "hostpci0 (01:00.0,rombar=0)",
			GPUField(FieldGPUPCIAddress, 0)},
		{"seventeen GPUs are refused", make17(), "at most 16", Field{Kind: FieldGPUs}},
		{"a mapping ID the library refuses is the mapping's fault", []GPU{{Mapping: "a6000-0"}, {Mapping: "a"}},
			"hostpci1 (mapping=a,rombar=0)", GPUField(FieldGPUMapping, 1)},
		{"a vGPU type with a comma is the mdev's fault", []GPU{{PCIAddress: "0000:c1:00.0", Mdev: "nvidia-1155,x"}},
			"hostpci0 (0000:c1:00.0,mdev=nvidia-1155,x,rombar=0): mediated device may not include ,", GPUField(FieldGPUMdev, 0)},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			err := ValidateGPUs(tc.gpus)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, tc.wantField, fe.Field)
			require.NotContains(t, err.Error(), "gpu[", "no Terraform attribute names")
		})
	}
}

func TestMaxHostPCIIsTheLibrarysAndPVEsLimit(t *testing.T) {
	// qemu-server's $MAX_HOSTPCI_DEVICES is 16; the library agrees.
	require.Equal(t, 16, MaxHostPCI)
	require.Equal(t, int(pxapi.QemuPciDevicesAmount), MaxHostPCI)
}

func TestParseHostPCI_functions(t *testing.T) {
	tests := []struct {
		description string
		value       string
		want        GPU
		gpu         string // the GPU function it resolves to, without facts
	}{
		{"a device without a function passes all its functions", "0000:01:00,pcie=1", GPU{PCIAddress: "0000:01:00", AllFunctions: true, PCIE: true, ROMBar: true}, "0000:01:00.0"},
		{"one function passes that function alone", "0000:01:00.1", GPU{PCIAddress: "0000:01:00.1", ROMBar: true}, "0000:01:00.1"},
		{"an id without its domain gets 0000", "01:00", GPU{PCIAddress: "0000:01:00", AllFunctions: true, ROMBar: true}, "0000:01:00.0"},
		{"uppercase hex reads as PVE's lowercase", "host=0000:C1:00.0,mdev=nvidia-1155", GPU{PCIAddress: "0000:c1:00.0", Mdev: "nvidia-1155", ROMBar: true}, "0000:c1:00.0"},
		{"a list of functions (virtual functions) keeps every one", "0000:41:00.2;0000:41:00.3,rombar=0",
			GPU{PCIAddress: "0000:41:00.2;0000:41:00.3"}, "0000:41:00.2"},
		{"a mapping names no host address: facts resolve it", "mapping=a6000-0,x-vga=1", GPU{Mapping: "a6000-0", PrimaryGPU: true, ROMBar: true, AllFunctions: true}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			g, err := ParseHostPCI(tc.value)
			require.NoError(t, err)
			require.Equal(t, tc.want, g)
			var facts *NodeFacts
			require.Equal(t, tc.gpu, facts.GPUFunction(g, "pve"))
		})
	}
}

func TestPCIAddresses(t *testing.T) {
	tests := []struct {
		description          string
		address              string
		device, primary      string
		hasFunction          bool
		covers, doesNotCover string
	}{
		{"a function", "0000:01:00.1", "0000:01:00", "0000:01:00.1", true, "0000:01:00.1", "0000:01:00.0"},
		{"a whole device covers its functions", "0000:01:00", "0000:01:00", "0000:01:00.0", false, "0000:01:00.1", "0000:02:00.0"},
		{"a domain other than 0000 is kept", "0001:c1:00.0", "0001:c1:00", "0001:c1:00.0", true, "0001:c1:00.0", "0000:c1:00.0"},
		{"a device without its domain covers it with the domain", "01:00", "01:00", "01:00.0", false, "0000:01:00.0", "0000:01:01.0"},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			require.Equal(t, tc.device, PCIDevice(tc.address))
			require.Equal(t, tc.primary, PrimaryFunction(tc.address))
			require.Equal(t, tc.hasFunction, PCIHasFunction(tc.address))
			require.True(t, PCICovers(tc.address, tc.covers))
			require.False(t, PCICovers(tc.address, tc.doesNotCover))
		})
	}
	require.Equal(t, "0000:0a:00.0", NormalizePCIAddress(" 0A:00.0"))
}

func make17() []GPU {
	out := make([]GPU, 17)
	for i := range out {
		out[i] = GPU{Mapping: "m"}
	}
	return out
}
