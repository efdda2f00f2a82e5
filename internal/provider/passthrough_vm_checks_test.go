package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// errorPaths are the attribute paths of diags' errors.
func errorPaths(diags diag.Diagnostics) []string {
	var out []string
	for _, d := range diags.Errors() {
		if wp, ok := d.(diag.DiagnosticWithPath); ok {
			out = append(out, wp.Path().String())
		}
	}
	return out
}

// testGPUModel is a gpu block with only the given attributes set, the
// rest null (their defaults apply).
func testGPUModel(set func(g *passthroughGPUModel)) passthroughGPUModel {
	g := passthroughGPUModel{
		Mapping: types.StringNull(), PCIAddress: types.StringNull(), AllFunctions: types.BoolNull(), PCIE: types.BoolNull(),
		PrimaryGPU: types.BoolNull(), ROMBar: types.BoolNull(), Mdev: types.StringNull(),
	}
	set(&g)
	return g
}

func byAddress(a string) func(g *passthroughGPUModel) {
	return func(g *passthroughGPUModel) { g.PCIAddress = types.StringValue(a) }
}

func TestPassthroughVMConfigChecksNameTheAttribute(t *testing.T) {
	efi := []passthroughEFIDiskModel{{Storage: types.StringValue("local-lvm"), PreEnrolledKeys: types.BoolNull()}}
	for _, tc := range []struct {
		description string
		machine     string // "" = unset (q35)
		bios        string // "" = unset (ovmf)
		efi         bool
		gpus        []passthroughGPUModel
		wantPath    string // "" = no error
		wantText    string
	}{
		{"the defaults with an EFI disk and a GPU by address pass", "", "", true,
			[]passthroughGPUModel{testGPUModel(byAddress("0000:01:00"))}, "", ""},
		{"pcie (default true) on an i440fx machine is refused", "pc", "", true,
			[]passthroughGPUModel{testGPUModel(byAddress("0000:01:00"))}, "gpu[0].pcie", `"q35 machine model is not enabled"`},
		{"pcie on a versioned q35 machine passes", "pc-q35-8.1", "", true,
			[]passthroughGPUModel{testGPUModel(byAddress("0000:01:00"))}, "", ""},
		{"pcie = false on i440fx passes", "pc-i440fx-8.1", "", true,
			[]passthroughGPUModel{testGPUModel(func(g *passthroughGPUModel) { byAddress("0000:01:00")(g); g.PCIE = types.BoolValue(false) })}, "", ""},
		{"OVMF (the default) without an EFI disk is refused", "", "", false, nil, "efi_disk", "temporary efivars disk"},
		{"SeaBIOS needs no EFI disk", "", "seabios", false, nil, "", ""},
		{"all_functions = false with a function-less address is refused", "", "", true,
			[]passthroughGPUModel{testGPUModel(func(g *passthroughGPUModel) { byAddress("0000:01:00")(g); g.AllFunctions = types.BoolValue(false) })},
			"gpu[0].pci_address", `"0000:01:00.0"`},
		{"all_functions with a mapping is refused", "", "", true,
			[]passthroughGPUModel{testGPUModel(func(g *passthroughGPUModel) {
				g.Mapping = types.StringValue("a6000-0")
				g.AllFunctions = types.BoolValue(true)
			})}, "gpu[0].all_functions", "whose path decides which functions go along"},
		{"an mdev on a function-less address is refused", "", "", true,
			[]passthroughGPUModel{testGPUModel(func(g *passthroughGPUModel) { byAddress("0000:c1:00")(g); g.Mdev = types.StringValue("nvidia-1155") })},
			"gpu[0].pci_address", `"0000:c1:00.0"`},
		{"two primary GPUs are refused", "", "", true, []passthroughGPUModel{
			testGPUModel(func(g *passthroughGPUModel) { byAddress("0000:01:00")(g); g.PrimaryGPU = types.BoolValue(true) }),
			testGPUModel(func(g *passthroughGPUModel) { byAddress("0000:02:00")(g); g.PrimaryGPU = types.BoolValue(true) }),
		}, "gpu[1].primary_gpu", "one primary display"},
		{"a vGPU as primary display is refused", "", "", true, []passthroughGPUModel{
			testGPUModel(func(g *passthroughGPUModel) {
				byAddress("0000:c1:00.0")(g)
				g.Mdev, g.PrimaryGPU = types.StringValue("nvidia-1155"), types.BoolValue(true)
			}),
		}, "gpu[0].primary_gpu", "x-vga needs the whole device"},
		{"the same device twice is refused", "", "", true, []passthroughGPUModel{
			testGPUModel(byAddress("0000:01:00")), testGPUModel(byAddress("0000:01:00.0")),
		}, "gpu[1].pci_address", "pass the same device (0000:01:00)"},
		{"a mapping and an address in one block are refused", "", "", true, []passthroughGPUModel{
			testGPUModel(func(g *passthroughGPUModel) { byAddress("0000:01:00")(g); g.Mapping = types.StringValue("a6000-0") }),
		}, "gpu[0].pci_address", "keep one"},
		{"a block with neither is refused", "", "", true, []passthroughGPUModel{testGPUModel(func(*passthroughGPUModel) {})},
			"gpu[0]", "sets neither mapping nor pci_address"},
		{"the same mapping twice is refused", "", "", true, []passthroughGPUModel{
			testGPUModel(func(g *passthroughGPUModel) { g.Mapping = types.StringValue("a6000-0") }),
			testGPUModel(func(g *passthroughGPUModel) { g.Mapping = types.StringValue("a6000-0") }),
		}, "gpu[1].mapping", "pass the same device"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			m := passthroughVMModel{Machine: types.StringNull(), BIOS: types.StringNull(), GPU: tc.gpus}
			if tc.machine != "" {
				m.Machine = types.StringValue(tc.machine)
			}
			if tc.bios != "" {
				m.BIOS = types.StringValue(tc.bios)
			}
			if tc.efi {
				m.EFIDisk = efi
			}
			diags := m.validate()
			if tc.wantPath == "" {
				require.False(t, diags.HasError(), errorDetails(diags))
				return
			}
			require.Equal(t, []string{tc.wantPath}, errorPaths(diags), errorDetails(diags))
			require.Contains(t, errorDetails(diags), tc.wantText)
		})
	}
}

func TestPassthroughVMConfigChecksSkipUnknowns(t *testing.T) {
	m := passthroughVMModel{Machine: types.StringUnknown(), BIOS: types.StringUnknown(), GPU: []passthroughGPUModel{
		testGPUModel(func(g *passthroughGPUModel) { g.PCIAddress = types.StringUnknown() }),
		// From a data source: one of them null at apply.
		testGPUModel(func(g *passthroughGPUModel) { g.PCIAddress, g.Mapping = types.StringUnknown(), types.StringUnknown() }),
	}}
	require.False(t, m.validate().HasError(), "nothing known, nothing refused")
}

// testFacts is a node like the emulator's: two RTX A6000 (VGA + audio,
// each device in its own IOMMU group), an H100 PCIe sharing group 30 with a
// Mellanox NIC, an L40S offering vGPU types, and an Intel NIC.
func testFacts(identity proxmox.Identity) *proxmox.NodeFacts {
	fn := func(addr, vendor, device, class, name string, group int) proxmox.PCIFunction {
		return proxmox.PCIFunction{Node: "pve", Address: addr, VendorID: vendor, DeviceID: device, Class: class, DeviceName: name, IOMMUGroup: group}
	}
	return &proxmox.NodeFacts{
		Node:     "pve",
		Identity: identity,
		Functions: []proxmox.PCIFunction{
			fn("0000:00:1f.6", "0x8086", "0x15bc", "0x020000", "Ethernet Connection", 9),
			fn("0000:01:00.0", "0x10de", "0x2230", "0x030000", "GA102GL [RTX A6000]", 14),
			fn("0000:01:00.1", "0x10de", "0x1aef", "0x040300", "GA102 High Definition Audio Controller", 14),
			fn("0000:02:00.0", "0x10de", "0x2230", "0x030000", "GA102GL [RTX A6000]", 15),
			fn("0000:02:00.1", "0x10de", "0x1aef", "0x040300", "GA102 High Definition Audio Controller", 15),
			fn("0000:41:00.0", "0x10de", "0x2331", "0x030200", "GH100 [H100 PCIe]", 30),
			fn("0000:42:00.0", "0x15b3", "0x101d", "0x020000", "MT2892 Family [ConnectX-6 Dx]", 30),
			{Node: "pve", Address: "0000:c1:00.0", VendorID: "0x10de", DeviceID: "0x26b9", Class: "0x030200", DeviceName: "AD102GL [L40S]",
				IOMMUGroup: 40, MdevCapable: true},
			fn("0000:d1:00.0", "0x10de", "0x2230", "0x030000", "GA102GL [RTX A6000]", -1),
		},
		Mappings: []proxmox.PCIMapping{
			{ID: "a6000-0", Entries: []proxmox.PCIMappingEntry{{Node: "pve", Path: "0000:01:00", ID: "10de:2230", IOMMUGroup: 14}}},
			{ID: "a6000-1", Entries: []proxmox.PCIMappingEntry{{Node: "pve", Path: "0000:02:00", ID: "10de:2230", IOMMUGroup: 15}}},
			{ID: "elsewhere", Entries: []proxmox.PCIMappingEntry{{Node: "pve2", Path: "0000:01:00", ID: "10de:2230", IOMMUGroup: 14}}},
			{ID: "stale", Entries: []proxmox.PCIMappingEntry{{Node: "pve", Path: "0000:0a:00", ID: "10de:2230", IOMMUGroup: 16}}},
			{ID: "l40s-vgpu", Mdev: true, Entries: []proxmox.PCIMappingEntry{{Node: "pve", Path: "0000:c1:00.0", ID: "10de:26b9", IOMMUGroup: 40}}},
		},
		Guests: []proxmox.Guest{
			{Node: "pve", VMID: 101, Name: "train", Status: "running", HostPCI: map[int]string{0: "mapping=a6000-1,pcie=1,rombar=1"}},
			{Node: "pve", VMID: 102, Name: "idle", Status: "stopped", HostPCI: map[int]string{0: "0000:01:00,pcie=1"}},
			{Node: "pve2", VMID: 103, Name: "other-node", Status: "running", HostPCI: map[int]string{0: "0000:01:00,pcie=1"}},
		},
		Mdev: map[string][]proxmox.MdevType{
			"0000:c1:00.0": {{Type: "nvidia-1155", Name: "NVIDIA L40S-4Q", Available: 12}, {Type: "nvidia-1160", Name: "NVIDIA L40S-48Q", Available: 0}},
		},
	}
}

var (
	rootPam   = proxmox.Identity{User: "root@pam"}
	rootToken = proxmox.Identity{User: "root@pam", TokenID: "gpu", IsToken: true}
	userToken = proxmox.Identity{User: "terraform@pve", TokenID: "gpu", IsToken: true}
	// noMappingUse is a token without Mapping.Use on the mappings.
	noMappingUse = proxmox.Identity{User: "terraform@pve", TokenID: "no-mapping", IsToken: true}
)

func TestPassthroughVMPreflightRefusesWhatWouldBreak(t *testing.T) {
	raw := func(a string) proxmox.GPU {
		return proxmox.GPU{PCIAddress: a, AllFunctions: true, PCIE: true, ROMBar: true}
	}
	for _, tc := range []struct {
		description string
		identity    proxmox.Identity
		vmid        int
		gpus        []proxmox.GPU
		wantPath    string // "" = no error
		wantText    string
	}{
		{"a free A6000 by address as root@pam passes", rootPam, 0, []proxmox.GPU{raw("0000:01:00.0")}, "", ""},
		{"a free A6000 by mapping with a token passes", userToken, 0, []proxmox.GPU{{Mapping: "a6000-0", PCIE: true, ROMBar: true}}, "", ""},
		{"a raw address with a user's token is refused", userToken, 0, []proxmox.GPU{raw("0000:01:00")},
			"gpu[0].pci_address", "use a mapping, or root@pam credentials"},
		{"a raw address with root@pam's own token is refused too", rootToken, 0, []proxmox.GPU{raw("0000:01:00")},
			"gpu[0].pci_address", "authenticates as root@pam!gpu"},
		{"an address the node lacks is refused", rootPam, 0, []proxmox.GPU{raw("0000:09:00")},
			"gpu[0].pci_address", "it has 0000:01:00.0, 0000:02:00.0, 0000:41:00.0, 0000:c1:00.0, 0000:d1:00.0"},
		{"a NIC is not an NVIDIA GPU", rootPam, 0, []proxmox.GPU{{PCIAddress: "0000:00:1f.6", PCIE: true, ROMBar: true}},
			"gpu[0].pci_address", "0000:00:1f.6 (Ethernet Connection, class 0x020000), not an NVIDIA display or 3D controller"},
		{"the GPU's audio function alone is not a GPU", rootPam, 0, []proxmox.GPU{{PCIAddress: "0000:01:00.1", PCIE: true, ROMBar: true}},
			"gpu[0].pci_address", "not an NVIDIA display or 3D controller"},
		{"the GPU without its audio function splits the IOMMU group", rootPam, 0, []proxmox.GPU{{PCIAddress: "0000:01:00.0", PCIE: true, ROMBar: true}},
			"gpu[0].pci_address", "IOMMU group 14 of node pve holds 0000:01:00.0, which this VM would get, and also 0000:01:00.1"},
		{"an H100 sharing its IOMMU group with a NIC is refused", rootPam, 0, []proxmox.GPU{raw("0000:41:00")},
			"gpu[0].pci_address", "0000:42:00.0 (MT2892 Family [ConnectX-6 Dx], class 0x020000), which it would not"},
		{"a node with the IOMMU off is refused", rootPam, 0, []proxmox.GPU{raw("0000:d1:00")},
			"gpu[0].pci_address", "IOMMU is off"},
		{"an unknown mapping is refused", userToken, 0, []proxmox.GPU{{Mapping: "a100-0", PCIE: true, ROMBar: true}},
			"gpu[0].mapping", "it has a6000-0, a6000-1, elsewhere, l40s-vgpu, stale"},
		{"a mapping without an entry on the node is refused", userToken, 0, []proxmox.GPU{{Mapping: "elsewhere", PCIE: true, ROMBar: true}},
			"gpu[0].mapping", "maps devices on pve2 (0000:01:00), not on node pve"},
		{"a GPU in another running VM is refused, naming it", userToken, 0, []proxmox.GPU{{Mapping: "a6000-1", PCIE: true, ROMBar: true}},
			"gpu[0].mapping", "passed through to VM 101 (train) on node pve (hostpci0: mapping=a6000-1,pcie=1,rombar=1), which is running"},
		{"the same GPU in the VM itself is no conflict", userToken, 101, []proxmox.GPU{{Mapping: "a6000-1", PCIE: true, ROMBar: true}}, "", ""},
		{"a GPU in a stopped VM or on another node is free", rootPam, 0, []proxmox.GPU{raw("0000:01:00")}, "", ""},
		{"a vGPU type with instances left passes", userToken, 0, []proxmox.GPU{{Mapping: "l40s-vgpu", Mdev: "nvidia-1155", PCIE: true, ROMBar: true}}, "", ""},
		{"a vGPU type with no instance left is refused", rootPam, 0, []proxmox.GPU{{PCIAddress: "0000:c1:00.0", Mdev: "nvidia-1160", PCIE: true, ROMBar: true}},
			"gpu[0].mdev", "has no instance of it left"},
		{"an unknown vGPU type is refused, listing the offered ones", rootPam, 0, []proxmox.GPU{{PCIAddress: "0000:c1:00.0", Mdev: "nvidia-9999", PCIE: true, ROMBar: true}},
			"gpu[0].mdev", "it offers nvidia-1155 (NVIDIA L40S-4Q, 12 left), nvidia-1160 (NVIDIA L40S-48Q, 0 left)"},
		{"a vGPU type through a mapping not marked for mdev is refused", userToken, 0, []proxmox.GPU{{Mapping: "a6000-0", Mdev: "nvidia-1155", PCIE: true, ROMBar: true}},
			"gpu[0].mapping", "not marked for mediated devices"},
		{"a raw address by a user other than root@pam, with a password, is refused", proxmox.Identity{User: "admin@pve"}, 0,
			[]proxmox.GPU{raw("0000:01:00")}, "gpu[0].pci_address", "authenticates as admin@pve: use a mapping, or root@pam credentials"},
		{"a mapping whose path the node lacks is refused", userToken, 0, []proxmox.GPU{{Mapping: "stale", PCIE: true, ROMBar: true}},
			"gpu[0].mapping", "entry on node pve is 0000:0a:00, which the node does not have"},
		{"a mapping without Mapping.Use on it is refused", noMappingUse, 0, []proxmox.GPU{{Mapping: "a6000-0", PCIE: true, ROMBar: true}},
			"gpu[0].mapping", "lacks Mapping.Use on /mapping/pci/a6000-0"},
		{"a mapping and an address of one device are refused", rootPam, 0, []proxmox.GPU{{Mapping: "a6000-0", PCIE: true, ROMBar: true}, raw("0000:01:00")},
			"gpu[1].pci_address", "which gpu[0] passes already"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			facts := testFacts(tc.identity)
			if tc.identity == noMappingUse {
				facts.MappingUse = map[string]bool{"a6000-0": false}
			}
			diags := preflightDiagnostics(preflightVM{node: "pve", vmid: tc.vmid, starting: true}, tc.gpus, facts)
			if tc.wantPath == "" {
				require.False(t, diags.HasError(), errorDetails(diags))
				return
			}
			require.Equal(t, []string{tc.wantPath}, errorPaths(diags), errorDetails(diags))
			require.Contains(t, errorDetails(diags), tc.wantText)
		})
	}
}

func TestPassthroughVMRestartNeededOnlyForARunningVMWithoutAllowRestart(t *testing.T) {
	gpu := func(a string) []passthroughGPUModel {
		return []passthroughGPUModel{testGPUModel(func(g *passthroughGPUModel) {
			byAddress(a)(g)
			g.AllFunctions, g.PCIE, g.PrimaryGPU, g.ROMBar = types.BoolValue(true), types.BoolValue(true), types.BoolValue(false), types.BoolValue(true)
		})}
	}
	model := func(status string, started, allowRestart bool, gpus []passthroughGPUModel, memory int64) *passthroughVMModel {
		return &passthroughVMModel{
			Node: types.StringValue("pve"), VMID: types.Int64Value(200), Name: types.StringValue("vm"), Status: types.StringValue(status),
			Started: types.BoolValue(started), AllowRestart: types.BoolValue(allowRestart), GPU: gpus,
			Cores: types.Int64Value(4), Sockets: types.Int64Value(1), CPUType: types.StringValue("host"), MemoryMiB: types.Int64Value(memory),
		}
	}
	for _, tc := range []struct {
		description string
		state, plan *passthroughVMModel
		wantPath    string
	}{
		{"a GPU change on a running VM", model("running", true, false, gpu("0000:01:00"), 8192), model("", true, false, gpu("0000:02:00"), 8192), "gpu"},
		{"a memory change on a running VM", model("running", true, false, gpu("0000:01:00"), 8192), model("", true, false, gpu("0000:01:00"), 16384), "memory_mib"},
		{"with allow_restart", model("running", true, false, gpu("0000:01:00"), 8192), model("", true, true, gpu("0000:02:00"), 8192), ""},
		{"on a stopped VM", model("stopped", false, false, gpu("0000:01:00"), 8192), model("", true, false, gpu("0000:02:00"), 8192), ""},
		{"stopping it in the same apply", model("running", true, false, gpu("0000:01:00"), 8192), model("", false, false, gpu("0000:02:00"), 8192), ""},
		{"the same GPU spelled differently is no change", model("running", true, false, gpu("0000:01:00"), 8192), model("", true, false, gpu("0000:01:00"), 8192), ""},
	} {
		t.Run(tc.description, func(t *testing.T) {
			diags := restartNeeded(context.Background(), tc.state, tc.plan)
			if tc.wantPath == "" {
				require.False(t, diags.HasError(), errorDetails(diags))
				return
			}
			require.Equal(t, []string{tc.wantPath}, errorPaths(diags))
			require.Contains(t, errorDetails(diags), "allow_restart = true")
		})
	}
}

func TestPassthroughVMImportID(t *testing.T) {
	node, vmid, err := parsePassthroughVMID("pve-a6000/200")
	require.NoError(t, err)
	require.Equal(t, "pve-a6000", node)
	require.Equal(t, int64(200), vmid)
	for _, bad := range []string{"200", "pve/", "pve/abc", "pve/99", "a/b/1", "/200"} {
		_, _, err := parsePassthroughVMID(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "node/vmid")
	}
}

func TestPassthroughVMGPUsReadBackKeepTheUsersSpelling(t *testing.T) {
	prior := []passthroughGPUModel{testGPUModel(func(g *passthroughGPUModel) {
		byAddress("0000:01:00.0")(g)
		g.AllFunctions = types.BoolValue(true)
	})}
	got := gpuModelsFromLive(prior, []proxmox.GPU{{PCIAddress: "0000:01:00", AllFunctions: true, PCIE: true, ROMBar: true}})
	require.Len(t, got, 1)
	require.Equal(t, "0000:01:00.0", got[0].PCIAddress.ValueString(), "the same device: the user's spelling stays")

	got = gpuModelsFromLive(prior, []proxmox.GPU{{PCIAddress: "0000:02:00", AllFunctions: true, PCIE: true, ROMBar: false}})
	require.Equal(t, "0000:02:00", got[0].PCIAddress.ValueString(), "another device changed outside Terraform shows")
	require.False(t, got[0].ROMBar.ValueBool())

	require.Empty(t, gpuModelsFromLive(prior, nil), "hostpci removed outside Terraform shows as no gpu")
}

func TestPassthroughVMGPUStatusesResolveMappings(t *testing.T) {
	facts := testFacts(rootPam)
	live := proxmox.VM{VMSpec: proxmox.VMSpec{Node: "pve", VMID: 190}, HostPCI: map[int]string{
		1: "0000:02:00,pcie=1,rombar=1", 0: "mapping=a6000-0,pcie=1,x-vga=1,rombar=1",
	}}
	got := gpuStatuses(live, asRead(facts, live))
	require.Len(t, got, 2)
	require.Equal(t, passthroughGPUStatusModel{HostPCI: "hostpci0", Value: "mapping=a6000-0,pcie=1,x-vga=1,rombar=1", PCIAddress: "0000:01:00.0",
		VendorID: "0x10de", DeviceID: "0x2230", Product: "GA102GL [RTX A6000]", IOMMUGroup: 14, Candidates: []string{"0000:01:00"}}, got[0])
	require.Equal(t, "0000:02:00.0", got[1].PCIAddress)
	require.Equal(t, "hostpci1", got[1].HostPCI)
}

func TestInventoryPCIDeviceShowsHolderAndMapping(t *testing.T) {
	facts := testFacts(rootPam)
	held := pciDeviceModel(facts.Functions[3], facts) // 0000:02:00.0, in running VM 101 through a6000-1
	require.False(t, held.Free)
	require.Equal(t, int64(101), *held.VMID)
	require.True(t, held.VMRunning)
	require.Equal(t, "a6000-1", *held.Mapping)

	stopped := pciDeviceModel(facts.Functions[1], facts) // 0000:01:00.0, in stopped VM 102
	require.True(t, stopped.Free)
	require.Equal(t, int64(102), *stopped.VMID)
	require.False(t, stopped.VMRunning)
	require.Equal(t, "0000:01:00", stopped.Device)
	require.True(t, stopped.GPU)

	audio := pciDeviceModel(facts.Functions[2], facts)
	require.False(t, audio.GPU)

	h100 := pciDeviceModel(facts.Functions[5], facts)
	require.Nil(t, h100.Mapping)
	require.Nil(t, h100.VMID)
	require.True(t, h100.Free)
}

func TestPassthroughVMPatternsMatchWhatProxmoxTakes(t *testing.T) {
	for _, tc := range []struct {
		pattern interface{ MatchString(string) bool }
		value   string
		ok      bool
	}{
		{pciAddressPattern, "0000:01:00", true},
		{pciAddressPattern, "0000:01:00.1", true},
		{pciAddressPattern, "0000:c1:1f.7", true},
		{pciAddressPattern, "01:00.0", false},      // the domain is written
		{pciAddressPattern, "0000:01:00.8", false}, // functions are 0-7
		{pciAddressPattern, "0000:01:20.0", false}, // devices are 00-1f
		{pciAddressPattern, "0000:C1:00.0", false}, // lowercase, as PVE lists them
		{pveMachinePattern, "q35", true},
		{pveMachinePattern, "pc-q35-8.1", true},
		{pveMachinePattern, "pc-i440fx-9.0+pve1", true},
		{pveMachinePattern, "pc", true},
		{pveMachinePattern, "virt", false}, // aarch64 only
		{pveMachinePattern, "q35,viommu=intel", false},
		{q35MachinePattern, "pc-q35-8.1", true},
		{q35MachinePattern, "pc-i440fx-8.1", false},
	} {
		require.Equal(t, tc.ok, tc.pattern.MatchString(tc.value), tc.value)
	}
}

func TestPassthroughVMNewVMIDInUseIsRefused(t *testing.T) {
	facts := testFacts(rootPam)
	gpus := []proxmox.GPU{{PCIAddress: "0000:01:00", AllFunctions: true, PCIE: true, ROMBar: true}}
	check := func(vm preflightVM) diag.Diagnostics { return preflightDiagnostics(vm, gpus, facts) }
	diags := check(preflightVM{node: "pve", newVMID: 101})
	require.Equal(t, []string{"vmid"}, errorPaths(diags))
	require.Contains(t, errorDetails(diags), `vmid 101 is VM "train" on node pve already`)
	require.Contains(t, errorDetails(diags), "terraform import <address> pve/101")
	require.False(t, check(preflightVM{node: "pve", newVMID: 200}).HasError())
	require.False(t, check(preflightVM{node: "pve", vmid: 101}).HasError(), "the VM itself, on update")
}

// A plan cannot tell a new resource from a tainted one, nor any plan from
// the one Terraform makes before a destroy: there another VM in the way is
// a warning, which the apply's create or update turns into an error before
// any write, and a VM of a created resource's own name is its predecessor.
func TestPassthroughVMPlannedCreateWarnsOfConflictsAndCountsNoOwnVM(t *testing.T) {
	facts := testFacts(userToken)
	held := []proxmox.GPU{{Mapping: "a6000-1", PCIE: true, ROMBar: true}} // in running VM 101 "train"
	for _, tc := range []struct {
		description   string
		vm            preflightVM
		gpus          []proxmox.GPU
		wantErrors    []string
		wantWarnings  []string
		wantNoMessage bool
	}{
		{"a create refuses a GPU another VM holds", preflightVM{starting: true, node: "pve"}, held, []string{"gpu[0].mapping"}, nil, false},
		{"a create refuses a VM ID in use", preflightVM{starting: true, node: "pve", newVMID: 101},
			[]proxmox.GPU{{Mapping: "a6000-0", PCIE: true, ROMBar: true}}, []string{"vmid"}, nil, false},
		{"a planned create warns of a GPU another VM holds", preflightVM{starting: true, node: "pve", planned: true, name: "web"}, held, nil, []string{"gpu[0].mapping"}, false},
		{"a planned create warns of a VM ID in use", preflightVM{starting: true, node: "pve", newVMID: 101, planned: true, name: "web"},
			[]proxmox.GPU{{Mapping: "a6000-0", PCIE: true, ROMBar: true}}, nil, []string{"vmid"}, false},
		{"a planned create of the VM's own name sees neither its GPU nor its VM ID as taken",
			preflightVM{starting: true, node: "pve", newVMID: 101, planned: true, name: "train"}, held, nil, nil, true},
		{"a planned update warns of a GPU another VM holds", preflightVM{starting: true, node: "pve", vmid: 300, planned: true}, held, nil, []string{"gpu[0].mapping"}, false},
		{"an update refuses a GPU another VM holds", preflightVM{starting: true, node: "pve", vmid: 300}, held, []string{"gpu[0].mapping"}, nil, false},
		{"a VM that stays stopped may be given a GPU another VM holds", preflightVM{node: "pve", vmid: 300}, held, nil, nil, true},
		{"a planned create still refuses what no other VM decides", preflightVM{starting: true, node: "pve", planned: true, name: "web"},
			[]proxmox.GPU{{PCIAddress: "0000:01:00", AllFunctions: true, PCIE: true, ROMBar: true}}, []string{"gpu[0].pci_address"}, nil, false},
	} {
		t.Run(tc.description, func(t *testing.T) {
			diags := preflightDiagnostics(tc.vm, tc.gpus, facts)
			require.Equal(t, tc.wantErrors, errorPaths(diags), errorDetails(diags))
			var warned []string
			for _, d := range diags.Warnings() {
				wp, ok := d.(diag.DiagnosticWithPath)
				require.True(t, ok, "a warning on an attribute")
				warned = append(warned, wp.Path().String())
				require.Contains(t, d.Detail(), "the apply stops before changing anything while this still holds")
			}
			require.Equal(t, tc.wantWarnings, warned)
			if tc.wantNoMessage {
				require.Empty(t, diags)
			}
		})
	}
}
