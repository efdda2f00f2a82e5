package proxmox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// l40sFunctions is a node with two L40S (functions 0 only, mdev-capable)
// and an A6000 with its audio function, as /nodes/{node}/hardware/pci
// reports them.
func l40sFunctions() []PCIFunction {
	l40s := func(addr string, group int) PCIFunction {
		return PCIFunction{Node: "pve-l40s-b", Address: addr, VendorID: "0x10de", DeviceID: "0x26b9", SubsystemVendorID: "0x10de",
			SubsystemDeviceID: "0x1851", Class: "0x030200", IOMMUGroup: group, MdevCapable: true}
	}
	return []PCIFunction{
		l40s("0000:41:00.0", 50), l40s("0000:61:00.0", 51),
		{Node: "pve-l40s-b", Address: "0000:81:00.0", VendorID: "0x10de", DeviceID: "0x2230", SubsystemVendorID: "0x10de", SubsystemDeviceID: "0x1459", Class: "0x030000", IOMMUGroup: 60},
		{Node: "pve-l40s-b", Address: "0000:81:00.1", VendorID: "0x10de", DeviceID: "0x1aef", SubsystemVendorID: "0x10de", SubsystemDeviceID: "0x1459", Class: "0x040300", IOMMUGroup: 60},
		{Node: "pve-l40s-b", Address: "0000:91:00.0", VendorID: "0x10de", DeviceID: "0x2230", Class: "0x030000", IOMMUGroup: -1},
	}
}

func TestEntryForDeviceIsWhatAssertValidExpects(t *testing.T) {
	fns := l40sFunctions()
	a6000 := []PCIFunction{fns[3], fns[2]} // out of order: the first function's attributes count
	whole := EntryForDevice("pve-l40s-b", a6000, true)
	require.Equal(t, PCIMappingEntry{Node: "pve-l40s-b", Path: "0000:81:00", ID: "10de:2230", SubsystemID: "10de:1459", IOMMUGroup: 60}, whole)
	require.Equal(t, "node=pve-l40s-b,path=0000:81:00,id=10de:2230,subsystem-id=10de:1459,iommugroup=60", FormatMappingEntry(whole))
	require.Empty(t, CheckMappingEntry(whole, fns))

	one := EntryForDevice("pve-l40s-b", fns[1:2], false)
	require.Equal(t, "node=pve-l40s-b,path=0000:61:00.0,id=10de:26b9,subsystem-id=10de:1851,iommugroup=51", FormatMappingEntry(one))
	require.Empty(t, PCIMapping{ID: "l40s", Mdev: true}.Check(one, fns))

	noGroup := EntryForDevice("pve-l40s-b", fns[4:5], false)
	require.Equal(t, "node=pve-l40s-b,path=0000:91:00.0,id=10de:2230", FormatMappingEntry(noGroup), "no IOMMU, no subsystem: left out")
	require.Empty(t, CheckMappingEntry(noGroup, fns))

	require.Equal(t, PCIMappingEntry{Node: "pve", IOMMUGroup: -1}, EntryForDevice("pve", nil, true))
}

func TestMappingEntryRoundTrip(t *testing.T) {
	for _, e := range []PCIMappingEntry{
		{Node: "pve", Path: "0000:01:00", ID: "10de:2230", SubsystemID: "10de:1459", IOMMUGroup: 14},
		{Node: "pve", Path: "0000:41:00.2;0000:41:00.3", ID: "10de:26b9", IOMMUGroup: 0, Description: "two VFs of slot 3"},
		{Node: "pve-b", Path: "0000:c1:00.0", ID: "10de:26b9", IOMMUGroup: -1},
	} {
		require.Equal(t, e, ParseMappingEntry(FormatMappingEntry(e)), FormatMappingEntry(e))
	}
	// As PVE's GUI writes it: its own key order.
	require.Equal(t, PCIMappingEntry{Node: "pve", Path: "0000:01:00", ID: "10de:2230", SubsystemID: "10de:1459", IOMMUGroup: 14},
		ParseMappingEntry("id=10de:2230,iommugroup=14,node=pve,path=0000:01:00,subsystem-id=10de:1459"))
}

func TestEntriesOnKeepTheMappingsOrder(t *testing.T) {
	m := PCIMapping{ID: "pool", Entries: []PCIMappingEntry{
		{Node: "b", Path: "0000:61:00.0"}, {Node: "a", Path: "0000:c1:00.0"}, {Node: "b", Path: "0000:41:00.0"},
	}}
	require.Equal(t, []PCIMappingEntry{{Node: "b", Path: "0000:61:00.0"}, {Node: "b", Path: "0000:41:00.0"}}, m.EntriesOn("b"))
	require.Nil(t, m.EntriesOn("c"))
}

// TestCheckIsAssertValid holds PCIMapping.Check to pve-guest-common
// src/PVE/Mapping/PCI.pm assert_valid: which properties it compares, in
// which order, and its messages word for word.
func TestCheckIsAssertValid(t *testing.T) {
	fns := l40sFunctions()
	good := PCIMappingEntry{Node: "pve-l40s-b", Path: "0000:41:00.0", ID: "10de:26b9", SubsystemID: "10de:1851", IOMMUGroup: 50}
	vgpu := PCIMapping{ID: "l40s-pool", Mdev: true}
	for _, tc := range []struct {
		description string
		mapping     PCIMapping
		entry       func(e *PCIMappingEntry)
		want        string
	}{
		{"a matching entry", vgpu, func(*PCIMappingEntry) {}, ""},
		{"a card gone", vgpu, func(e *PCIMappingEntry) { e.Path = "0000:42:00.0" }, "pci device '0000:42:00.0' not found"},
		{"a whole device gets .0", vgpu, func(e *PCIMappingEntry) { e.Path = "0000:42:00" }, "pci device '0000:42:00.0' not found"},
		{"another card in the slot", vgpu, func(e *PCIMappingEntry) { e.ID = "10de:2230" },
			"'id' does not match for 'l40s-pool' (10de:26b9 != 10de:2230)"},
		{"0x is stripped from both", vgpu, func(e *PCIMappingEntry) { e.ID = "0x10de:0x26b9" }, ""},
		{"no iommugroup configured", vgpu, func(e *PCIMappingEntry) { e.IOMMUGroup = -1 },
			"missing expected property 'iommugroup' for device '0000:41:00.0'"},
		{"the card moved to another IOMMU group", vgpu, func(e *PCIMappingEntry) { e.IOMMUGroup = 7 },
			"'iommugroup' does not match for 'l40s-pool' (50 != 7)"},
		{"mdev is compared before subsystem-id", PCIMapping{ID: "l40s-pool"}, func(e *PCIMappingEntry) { e.SubsystemID = "" },
			"'mdev' does not match for 'l40s-pool' (1 != 0)"},
		{"no subsystem-id configured", vgpu, func(e *PCIMappingEntry) { e.SubsystemID = "" },
			"missing expected property 'subsystem-id' for device '0000:41:00.0'"},
		{"a subsystem-id the hardware lacks", vgpu, func(e *PCIMappingEntry) {
			e.Path, e.ID, e.IOMMUGroup = "0000:91:00.0", "10de:2230", -1
		}, "'mdev' does not match for 'l40s-pool' (0 != 1)"},
		{"a subsystem-id the hardware lacks (passthrough)", PCIMapping{ID: "a6000"}, func(e *PCIMappingEntry) {
			e.Path, e.ID, e.IOMMUGroup = "0000:91:00.0", "10de:2230", -1
		}, "unexpected property 'subsystem-id' configured for device '0000:91:00.0'"},
		{"an iommugroup where the node has no IOMMU", PCIMapping{ID: "a6000"}, func(e *PCIMappingEntry) {
			e.Path, e.ID, e.SubsystemID, e.IOMMUGroup = "0000:91:00.0", "10de:2230", "", 3
		}, "unexpected property 'iommugroup' configured for device '0000:91:00.0'"},
		{"a ';' list checks iommugroup on its first path only", vgpu, func(e *PCIMappingEntry) { e.Path = "0000:41:00.0;0000:61:00.0" }, ""},
		{"a ';' list checks id on every path", PCIMapping{ID: "mixed"}, func(e *PCIMappingEntry) {
			e.Path, e.ID, e.SubsystemID, e.IOMMUGroup = "0000:81:00.0;0000:81:00.1", "10de:2230", "10de:1459", 60
		}, "'id' does not match for 'mixed' (10de:1aef != 10de:2230)"},
		{"case counts, as in Perl's ne", vgpu, func(e *PCIMappingEntry) { e.ID = "10DE:26B9" },
			"'id' does not match for 'l40s-pool' (10de:26b9 != 10DE:26B9)"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			e := good
			tc.entry(&e)
			require.Equal(t, tc.want, tc.mapping.Check(e, fns))
		})
	}
	// Without the cluster mapping (CheckMappingEntry) mdev is not compared
	// and the message cannot name the mapping.
	e := good
	require.Empty(t, CheckMappingEntry(e, fns))
	e.ID = "10de:2230"
	require.Equal(t, "'id' does not match (10de:26b9 != 10de:2230)", CheckMappingEntry(e, fns))
}

func TestMappingIDAndDescriptionsArePVEs(t *testing.T) {
	for id, ok := range map[string]bool{"l40s-pool": true, "A6000_0": true, "a": false, "0gpu": false, "gpu.0": false, "": false} {
		err := ValidateMappingID(id)
		if ok {
			require.NoError(t, err, id)
		} else {
			require.EqualError(t, err, "invalid configuration ID '"+id+"'")
		}
	}
	require.NoError(t, ValidateMappingDescription("L40S, both slots", false))
	require.ErrorContains(t, ValidateMappingDescription("slot 3, left", true), "cannot hold a comma")
	require.ErrorContains(t, ValidateMappingDescription(strings.Repeat("x", 4097), false), "at most 4096")
}
