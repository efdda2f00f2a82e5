package proxmox

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// testNodeFacts is node "pve": two A6000s (VGA + audio, a group each), an
// H100 sharing its group with a NIC; VM 101 "train" runs with the second
// A6000 through a mapping, VM 102 "idle" is stopped with the first.
func testNodeFacts(identity Identity) *NodeFacts {
	fn := func(addr, vendor, device, class string, group int) PCIFunction {
		return PCIFunction{Node: "pve", Address: addr, VendorID: vendor, DeviceID: device, Class: class, IOMMUGroup: group}
	}
	return &NodeFacts{
		Node: "pve", Identity: identity,
		Functions: []PCIFunction{
			fn("0000:01:00.0", "0x10de", "0x2230", "0x030000", 14), fn("0000:01:00.1", "0x10de", "0x1aef", "0x040300", 14),
			fn("0000:02:00.0", "0x10de", "0x2230", "0x030000", 15), fn("0000:02:00.1", "0x10de", "0x1aef", "0x040300", 15),
			fn("0000:41:00.0", "0x10de", "0x2331", "0x030200", 30), fn("0000:42:00.0", "0x15b3", "0x101d", "0x020000", 30),
		},
		Mappings: []PCIMapping{
			{ID: "a6000-0", Entries: []PCIMappingEntry{{Node: "pve", Path: "0000:01:00", ID: "10de:2230", IOMMUGroup: 14}}},
			{ID: "a6000-1", Entries: []PCIMappingEntry{{Node: "pve", Path: "0000:02:00", ID: "10de:2230", IOMMUGroup: 15}}},
		},
		Guests: []Guest{
			{Node: "pve", VMID: 101, Name: "train", Status: "running", HostPCI: map[int]string{0: "mapping=a6000-1,pcie=1"}},
			{Node: "pve", VMID: 102, Name: "idle", Status: "stopped", HostPCI: map[int]string{0: "0000:01:00,pcie=1"}},
		},
	}
}

func TestPreflightFindingsNameTheField(t *testing.T) {
	root, token := Identity{User: "root@pam"}, Identity{User: "terraform@pve", TokenID: "gpu", IsToken: true}
	raw := func(a string) GPU { return GPU{PCIAddress: a, AllFunctions: true, PCIE: true, ROMBar: true} }
	mapped := func(m string) GPU { return GPU{Mapping: m, PCIE: true, ROMBar: true} }
	for _, tc := range []struct {
		description string
		identity    Identity
		vm          PreflightVM
		gpus        []GPU
		want        []Finding // Kind and Field only
	}{
		{"a free GPU by mapping passes", token, PreflightVM{Node: "pve"}, []GPU{mapped("a6000-0")}, nil},
		{"a raw address needs root@pam", token, PreflightVM{Node: "pve"}, []GPU{raw("0000:01:00")},
			[]Finding{{Kind: FindingRawAddressNeedsRoot, Field: GPUField(FieldGPUPCIAddress, 0)}}},
		{"a GPU a running VM holds is a conflict", token, PreflightVM{Node: "pve"}, []GPU{mapped("a6000-0"), mapped("a6000-1")},
			[]Finding{{Kind: FindingGPUHeld, Field: GPUField(FieldGPUMapping, 1)}}},
		{"the VM itself holds no conflict", token, PreflightVM{Node: "pve", VMID: 101}, []GPU{mapped("a6000-1")}, nil},
		{"nor does a VM of its own name", token, PreflightVM{Node: "pve", NewVMID: 101, OwnName: "train"}, []GPU{mapped("a6000-1")}, nil},
		{"a VM ID in use", root, PreflightVM{Node: "pve", NewVMID: 102}, []GPU{raw("0000:01:00")},
			[]Finding{{Kind: FindingVMIDInUse, Field: Field{Kind: FieldVMID}}}},
		{"an IOMMU group shared with a NIC", root, PreflightVM{Node: "pve"}, []GPU{raw("0000:41:00")},
			[]Finding{{Kind: FindingGroupNotWhole, Field: GPUField(FieldGPUPCIAddress, 0)}}},
		{"one function of a device a running VM holds is held too", root, PreflightVM{Node: "pve"}, []GPU{{PCIAddress: "0000:02:00.0"}},
			[]Finding{{Kind: FindingGPUHeld, Field: GPUField(FieldGPUPCIAddress, 0)}}},
		{"a NIC is not a GPU", root, PreflightVM{Node: "pve"}, []GPU{{PCIAddress: "0000:42:00.0"}},
			[]Finding{{Kind: FindingNotNVIDIAGPU, Field: GPUField(FieldGPUPCIAddress, 0)}}},
		{"an unknown mapping", token, PreflightVM{Node: "pve"}, []GPU{mapped("a100-0")},
			[]Finding{{Kind: FindingMappingNotFound, Field: GPUField(FieldGPUMapping, 0)}}},
		{"one device twice", root, PreflightVM{Node: "pve"}, []GPU{mapped("a6000-0"), raw("0000:01:00.0")},
			[]Finding{{Kind: FindingPassedTwice, Field: GPUField(FieldGPUPCIAddress, 1)}}},
	} {
		t.Run(tc.description, func(t *testing.T) {
			var got []Finding
			for _, f := range Preflight(tc.vm, tc.gpus, testNodeFacts(tc.identity)) {
				got = append(got, Finding{Kind: f.Kind, Field: f.Field})
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestPreflightConflictsAreAboutOtherVMs(t *testing.T) {
	for kind, conflict := range map[FindingKind]bool{
		FindingGPUHeld: true, FindingVMIDInUse: true, FindingMdevTypeUsedUp: true, FindingPoolExhausted: true, FindingMappingInvalid: false,
		FindingGroupNotWhole: false, FindingRawAddressNeedsRoot: false, FindingMappingNotFound: false, FindingNoSuchMdevType: false,
	} {
		require.Equal(t, conflict, Finding{Kind: kind}.Conflict(), kind)
	}
}

func TestHeldByReadsEveryFormOfAHostPCIValue(t *testing.T) {
	facts := testNodeFacts(Identity{User: "root@pam"})
	facts.Guests = []Guest{
		{Node: "pve", VMID: 201, Status: "running", HostPCI: map[int]string{3: "host=02:00.1;02:00.0,pcie=1"}},
		{Node: "pve", VMID: 202, Status: "running", HostPCI: map[int]string{0: "0000:41:00.0,mdev=nvidia-1155"}},
	}
	fns := facts.DeviceFunctions("0000:02:00")
	require.Len(t, fns, 2)
	h, ok := facts.HeldBy("pve", fns, true, nil)
	require.True(t, ok, "a ';' list without the domain")
	require.Equal(t, 201, h.Guest.VMID)
	require.Equal(t, "hostpci3: host=02:00.1;02:00.0,pcie=1", h.Line)
	_, ok = facts.HeldBy("pve", facts.DeviceFunctions("0000:41:00"), true, nil)
	require.False(t, ok, "a vGPU instance holds no device")
	_, ok = facts.HeldBy("pve", fns, true, func(g Guest) bool { return g.VMID == 201 })
	require.False(t, ok, "the VM itself")
}

func TestStopFields(t *testing.T) {
	base := VMSpec{Cores: 4, Sockets: 1, CPUType: "host", MemoryMiB: 8192, Machine: "q35", BIOS: "ovmf", Tags: []string{"gpu"},
		GPUs: []GPU{{PCIAddress: "0000:01:00", AllFunctions: true, PCIE: true, ROMBar: true}}}
	for _, tc := range []struct {
		description string
		change      func(s *VMSpec)
		want        []Field
	}{
		{"nothing changed", func(*VMSpec) {}, nil},
		{"tags and name change on a running VM", func(s *VMSpec) { s.Tags, s.Name = []string{"ml"}, "renamed" }, nil},
		{"the same GPU spelled with its function and all functions", func(s *VMSpec) {
			s.GPUs = []GPU{{PCIAddress: "0000:01:00.0", AllFunctions: true, PCIE: true, ROMBar: true}}
		}, nil},
		{"another GPU", func(s *VMSpec) { s.GPUs = []GPU{{Mapping: "a6000-1", PCIE: true, ROMBar: true}} }, []Field{{Kind: FieldGPUs}}},
		{"a GPU removed", func(s *VMSpec) { s.GPUs = nil }, []Field{{Kind: FieldGPUs}}},
		{"memory and cores, GPUs first", func(s *VMSpec) {
			s.MemoryMiB, s.Cores, s.GPUs = 16384, 8, append(s.GPUs, GPU{Mapping: "a6000-1", ROMBar: true})
		}, []Field{{Kind: FieldGPUs}, {Kind: FieldCores}, {Kind: FieldMemory}}},
		{"machine and firmware", func(s *VMSpec) { s.Machine, s.BIOS = "pc", "seabios" }, []Field{{Kind: FieldMachine}, {Kind: FieldBIOS}}},
	} {
		t.Run(tc.description, func(t *testing.T) {
			planned := base
			planned.GPUs = append([]GPU(nil), base.GPUs...)
			tc.change(&planned)
			require.Equal(t, tc.want, StopFields(base, planned))
		})
	}
	require.True(t, NeedsStop("hostpci15"))
	require.False(t, NeedsStop("hostpcix"))
	require.False(t, NeedsStop("tags"))
}
