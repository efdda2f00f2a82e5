package proxmox

import (
	"testing"

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
	}{
		{"a mapping and a raw address are accepted", []GPU{{Mapping: "a6000-0"}, {PCIAddress: "0000:02:00.0"}}, ""},
		{"both mapping and pci_address is refused", []GPU{{Mapping: "a6000-0", PCIAddress: "0000:01:00.0"}}, "gpu[0]: set exactly one of mapping and pci_address"},
		{"neither is refused", []GPU{{}}, "gpu[0]: set exactly one"},
		{"a malformed address is refused by the library's validator", []GPU{{PCIAddress: "01:00.0"}}, "gpu[0]"},
		{"seventeen GPUs are refused", make17(), "at most 16"},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			err := ValidateGPUs(tc.gpus)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func make17() []GPU {
	out := make([]GPU, 17)
	for i := range out {
		out[i] = GPU{Mapping: "m"}
	}
	return out
}
