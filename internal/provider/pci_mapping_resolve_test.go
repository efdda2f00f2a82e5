package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// The resolution of gpu_pci_mapping's devices, on hardware written here
// as /nodes/{node}/hardware/pci answers it.

func l40sFunction(node, bus string, group int) proxmox.PCIFunction {
	return proxmox.PCIFunction{Node: node, Address: "0000:" + bus + ":00.0", VendorID: "0x10de", DeviceID: "0x26b9",
		SubsystemVendorID: "0x10de", SubsystemDeviceID: "0x1851", Class: "0x030200", VendorName: "NVIDIA Corporation",
		DeviceName: "AD102GL [L40S]", IOMMUGroup: group, MdevCapable: true}
}

func a6000Functions(node, bus string, group int) []proxmox.PCIFunction {
	return []proxmox.PCIFunction{
		{Node: node, Address: "0000:" + bus + ":00.0", VendorID: "0x10de", DeviceID: "0x2230", SubsystemVendorID: "0x10de",
			SubsystemDeviceID: "0x1459", Class: "0x030000", VendorName: "NVIDIA Corporation", DeviceName: "GA102GL [RTX A6000]", IOMMUGroup: group},
		{Node: node, Address: "0000:" + bus + ":00.1", VendorID: "0x10de", DeviceID: "0x1aef", SubsystemVendorID: "0x10de",
			SubsystemDeviceID: "0x1459", Class: "0x040300", VendorName: "NVIDIA Corporation", DeviceName: "GA102 High Definition Audio Controller", IOMMUGroup: group},
	}
}

func testHardware() mappingHardware {
	return mappingHardware{
		nodes: []string{"pve-a6000", "pve-cpu", "pve-h100", "pve-l40s", "pve-l40s-b"},
		functions: map[string][]proxmox.PCIFunction{
			"pve-a6000": append(a6000Functions("pve-a6000", "01", 14), a6000Functions("pve-a6000", "02", 15)...),
			"pve-cpu":   {},
			"pve-h100": {
				{Node: "pve-h100", Address: "0000:41:00.0", VendorID: "0x10de", DeviceID: "0x2331", SubsystemVendorID: "0x10de",
					SubsystemDeviceID: "0x1626", Class: "0x030200", DeviceName: "GH100 [H100 PCIe]", IOMMUGroup: 30},
				{Node: "pve-h100", Address: "0000:42:00.0", VendorID: "0x15b3", DeviceID: "0x1021", Class: "0x020000",
					VendorName: "Mellanox Technologies", DeviceName: "MT2910 Family [ConnectX-7]", IOMMUGroup: 30},
			},
			"pve-l40s":   {l40sFunction("pve-l40s", "c1", 40)},
			"pve-l40s-b": {l40sFunction("pve-l40s-b", "41", 50), l40sFunction("pve-l40s-b", "61", 51)},
		},
		others: []proxmox.PCIMapping{
			{ID: "a6000-0", Entries: []proxmox.PCIMappingEntry{{Node: "pve-a6000", Path: "0000:01:00", ID: "10de:2230", SubsystemID: "10de:1459", IOMMUGroup: 14}}},
			{ID: "l40s-vgpu", Mdev: true, Entries: []proxmox.PCIMappingEntry{{Node: "pve-l40s", Path: "0000:c1:00.0", ID: "10de:26b9", SubsystemID: "10de:1851", IOMMUGroup: 40}}},
		},
	}
}

// only is the one diagnostic of diags with that severity, as "path: summary: detail".
func only(t *testing.T, diags diag.Diagnostics, severity diag.Severity) string {
	t.Helper()
	var out []string
	for _, d := range diags {
		if d.Severity() != severity {
			continue
		}
		at := ""
		if p, ok := d.(diag.DiagnosticWithPath); ok {
			at = p.Path().String()
		}
		out = append(out, at+": "+d.Summary()+": "+d.Detail())
	}
	require.Len(t, out, 1, "%v", diags)
	return out[0]
}

func TestResolveMapping_selectEveryL40SOnEveryNodeWarnsOfTheVGPUMapping(t *testing.T) {
	entries, _, diags := resolveMapping(mappingRequest{name: "l40s-all", mdev: true, mdevSet: true, selected: true, product: "l40s"}, testHardware())
	require.False(t, diags.HasError(), "%v", diags)
	var got []string
	for _, e := range entries {
		got = append(got, e.Node+" "+e.Path+" "+e.ID+" "+e.SubsystemID+" "+e.product)
	}
	require.Equal(t, []string{
		"pve-l40s 0000:c1:00 10de:26b9 10de:1851 AD102GL [L40S]",
		"pve-l40s-b 0000:41:00 10de:26b9 10de:1851 AD102GL [L40S]",
		"pve-l40s-b 0000:61:00 10de:26b9 10de:1851 AD102GL [L40S]",
	}, got)
	require.Equal(t, []int{40, 50, 51}, []int{entries[0].IOMMUGroup, entries[1].IOMMUGroup, entries[2].IOMMUGroup})
	warning := only(t, diags, diag.SeverityWarning)
	require.Contains(t, warning, `select[0].product: Device in another mapping`)
	require.Contains(t, warning, `0000:c1:00 on node pve-l40s is in mapping "l40s-vgpu" too`)
}

func TestResolveMapping_mdevFollowsTheDevicesUnlessSet(t *testing.T) {
	hw := testHardware()
	hw.others = nil
	_, mdev, diags := resolveMapping(mappingRequest{name: "x", selected: true, product: "L40S"}, hw)
	require.False(t, diags.HasError(), "%v", diags)
	require.True(t, mdev, "the L40S offers vGPU types")
	_, mdev, diags = resolveMapping(mappingRequest{name: "x", selected: true, product: "A6000"}, hw)
	require.False(t, diags.HasError(), "%v", diags)
	require.False(t, mdev, "the A6000 offers none")
	_, _, diags = resolveMapping(mappingRequest{name: "x", selected: true, product: "/A6000|L40S/"}, hw)
	err := only(t, diags, diag.SeverityError)
	require.Contains(t, err, "mdev: vGPU and passthrough-only devices in one mapping")
	require.Contains(t, err, "pve-l40s 0000:c1:00.0, pve-l40s-b 0000:41:00.0, pve-l40s-b 0000:61:00.0, while these do not: pve-a6000 0000:01:00.0")
}

func TestResolveMapping_selectByRegexOnNamedNodes(t *testing.T) {
	entries, _, diags := resolveMapping(mappingRequest{name: "pool", selected: true, product: "/RTX A[0-9]+/", nodes: []string{"pve-a6000"}},
		func() mappingHardware { hw := testHardware(); hw.others = nil; return hw }())
	require.False(t, diags.HasError(), "%v", diags)
	require.Len(t, entries, 2, "one entry per device, not per function")
	require.Equal(t, "0000:01:00", entries[0].Path)
	require.Equal(t, "0000:02:00", entries[1].Path)
}

func TestResolveMapping_selectMatchingNothingListsTheNodesGPUs(t *testing.T) {
	_, _, diags := resolveMapping(mappingRequest{name: "x", selected: true, product: "B200", nodes: []string{"pve-a6000", "pve-cpu"}}, testHardware())
	err := only(t, diags, diag.SeverityError)
	require.Contains(t, err, `select[0].product: No GPU matches`)
	require.Contains(t, err, `pve-a6000: 0000:01:00.0 GA102GL [RTX A6000], 0000:02:00.0 GA102GL [RTX A6000]; pve-cpu: none`)

	_, _, diags = resolveMapping(mappingRequest{name: "x", selected: true, product: "L40S", nodes: []string{"pve-nope"}}, testHardware())
	require.Contains(t, only(t, diags, diag.SeverityError), `select[0].nodes: No such node: select.nodes names "pve-nope"`)
}

func TestResolveMapping_selectDropsACardPulled(t *testing.T) {
	hw := testHardware()
	req := mappingRequest{name: "pool", selected: true, product: "L40S", nodes: []string{"pve-l40s-b"}}
	before, _, diags := resolveMapping(req, hw)
	require.False(t, diags.HasError(), "%v", diags)
	hw.functions["pve-l40s-b"] = hw.functions["pve-l40s-b"][:1] // 0000:61:00 pulled
	after, _, diags := resolveMapping(req, hw)
	require.False(t, diags.HasError(), "%v", diags)
	require.Len(t, before, 2)
	require.Len(t, after, 1)
	require.Equal(t, "0000:41:00", after[0].Path)
	var prior []proxmox.PCIMappingEntry
	for _, e := range before {
		prior = append(prior, e.PCIMappingEntry)
	}
	require.False(t, sameEntries(prior, after), "the plan shows the change")
}

func TestResolveMapping_deviceGoneNamesTheBlockAndTheCardsNewAddress(t *testing.T) {
	hw := testHardware()
	// The card at 0000:61:00 was moved to 0000:81:00 (a new IOMMU group).
	hw.functions["pve-l40s-b"] = []proxmox.PCIFunction{l40sFunction("pve-l40s-b", "41", 50), l40sFunction("pve-l40s-b", "81", 52)}
	prior := []proxmox.PCIMappingEntry{
		{Node: "pve-l40s-b", Path: "0000:41:00", ID: "10de:26b9", SubsystemID: "10de:1851", IOMMUGroup: 50},
		{Node: "pve-l40s-b", Path: "0000:61:00", ID: "10de:26b9", SubsystemID: "10de:1851", IOMMUGroup: 51},
	}
	req := mappingRequest{name: "pair", mdev: true, mdevSet: true, prior: prior, devices: []mappingDevice{{"pve-l40s-b", "0000:41:00"}, {"pve-l40s-b", "0000:61:00"}}}
	_, _, diags := resolveMapping(req, hw)
	err := only(t, diags, diag.SeverityError)
	require.Contains(t, err, `device[1].address: PCI device gone: device[1]: node pve-l40s-b has no PCI device at 0000:61:00`)
	require.Contains(t, err, `is now at 0000:81:00: set address = "0000:81:00"`)

	// Pulled: no card of that kind left unmapped, no address to offer.
	hw.functions["pve-l40s-b"] = []proxmox.PCIFunction{l40sFunction("pve-l40s-b", "41", 50)}
	_, _, diags = resolveMapping(req, hw)
	err = only(t, diags, diag.SeverityError)
	require.Contains(t, err, `the card is gone`)
	require.NotContains(t, err, `is now at`)
}

func TestResolveMapping_deviceChecks(t *testing.T) {
	hw := testHardware()
	for name, tc := range map[string]struct {
		req  mappingRequest
		want string
	}{
		"not a GPU": {mappingRequest{devices: []mappingDevice{{"pve-a6000", "0000:01:00.1"}}},
			`device[0].address: Not an NVIDIA GPU: device[0].address "0000:01:00.1" on node pve-a6000 is 0000:01:00.1 (NVIDIA Corporation GA102 High Definition Audio Controller, class 0x040300)`},
		"group not whole": {mappingRequest{devices: []mappingDevice{{"pve-h100", "0000:41:00"}}},
			`device[0].address: IOMMU group not mapped whole: 0000:41:00 on node pve-h100 is in IOMMU group 30, which also holds 0000:42:00.0 (Mellanox Technologies MT2910 Family [ConnectX-7], class 0x020000)`},
		"function leaves the audio out": {mappingRequest{devices: []mappingDevice{{"pve-a6000", "0000:02:00.0"}}},
			`which also holds 0000:02:00.1 (NVIDIA Corporation GA102 High Definition Audio Controller`},
		"both passthrough": {mappingRequest{name: "mine", devices: []mappingDevice{{"pve-a6000", "0000:01:00"}}},
			`device[0].address: Device in another mapping: 0000:01:00 on node pve-a6000 is in mapping "a6000-0" already`},
		"mapped twice": {mappingRequest{mdev: true, mdevSet: true, devices: []mappingDevice{{"pve-l40s-b", "0000:41:00"}, {"pve-l40s-b", "0000:41:00.0"}}},
			`device[1].address: Device mapped twice`},
		"no such node": {mappingRequest{devices: []mappingDevice{{"pve-x", "0000:41:00"}}}, `device[0].node: No such node`},
		"mdev flag off on a vGPU card": {mappingRequest{mdevSet: true, devices: []mappingDevice{{"pve-l40s-b", "0000:41:00"}}},
			`mdev: Mapping must be marked mdev: 0000:41:00.0 on node pve-l40s-b offers mediated devices`},
		"mdev flag on a card without vGPU": {mappingRequest{mdev: true, mdevSet: true, devices: []mappingDevice{{"pve-a6000", "0000:02:00"}}},
			`mdev: Device has no vGPU`},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, diags := resolveMapping(tc.req, hw)
			require.Contains(t, only(t, diags, diag.SeverityError), tc.want)
		})
	}
}

// A node offline (its hardware not read) keeps the entries the state has
// there, whether select names it or means every node: a mapping written
// without them would take the card from the node's VMs.
func TestResolveMapping_anOfflineNodeKeepsItsEntries(t *testing.T) {
	hw := testHardware()
	delete(hw.functions, "pve-l40s-b") // offline: readMappingHardware reads no functions there
	offline := []proxmox.PCIMappingEntry{
		{Node: "pve-l40s-b", Path: "0000:41:00", ID: "10de:26b9", SubsystemID: "10de:1851", IOMMUGroup: 50},
		{Node: "pve-l40s-b", Path: "0000:61:00", ID: "10de:26b9", SubsystemID: "10de:1851", IOMMUGroup: 51},
	}
	online := proxmox.PCIMappingEntry{Node: "pve-l40s", Path: "0000:c1:00", ID: "10de:26b9", SubsystemID: "10de:1851", IOMMUGroup: 40}
	for name, tc := range map[string]struct {
		nodes []string
		prior []proxmox.PCIMappingEntry
		want  []proxmox.PCIMappingEntry
	}{
		"nodes names it":                 {nodes: []string{"pve-l40s-b"}, prior: offline, want: offline},
		"nodes unset":                    {prior: append([]proxmox.PCIMappingEntry{online}, offline...), want: append([]proxmox.PCIMappingEntry{online}, offline...)},
		"nodes unset, none there before": {prior: []proxmox.PCIMappingEntry{online}, want: []proxmox.PCIMappingEntry{online}},
	} {
		t.Run(name, func(t *testing.T) {
			req := mappingRequest{name: "x", mdev: true, mdevSet: true, prior: tc.prior, selected: true, product: "L40S", nodes: tc.nodes}
			entries, _, diags := resolveMapping(req, hw)
			require.False(t, diags.HasError(), "%v", diags)
			require.True(t, sameEntries(tc.want, entries), "want %v, got %v", tc.want, entries)
			for _, e := range entries {
				require.Equal(t, e.Node == "pve-l40s-b", e.kept, "%s %s", e.Node, e.Path)
			}
		})
	}

	_, _, diags := resolveMapping(mappingRequest{name: "x", mdev: true, mdevSet: true, devices: []mappingDevice{{"pve-l40s-b", "0000:61:00"}}}, hw)
	require.Contains(t, only(t, diags, diag.SeverityError), `device[0].node: Node offline`)
}

func TestPCIMappingValidate_exactlyOneOfSelectAndDevice(t *testing.T) {
	both := pciMappingModel{Select: []pciMappingSelectModel{{}}, Device: []pciMappingDeviceModel{{}}}
	diags := both.validate()
	require.True(t, diags.HasError())
	withPath, ok := diags.Errors()[0].(diag.DiagnosticWithPath)
	require.True(t, ok)
	require.True(t, withPath.Path().Equal(path.Root("device")))
	require.Contains(t, diags.Errors()[0].Detail(), "not both")
	none := pciMappingModel{}
	require.True(t, strings.Contains(none.validate().Errors()[0].Detail(), "add a select block"))
	require.False(t, (&pciMappingModel{Select: []pciMappingSelectModel{{}}}).validate().HasError())
}

func TestProductMatcher(t *testing.T) {
	match, err := productMatcher("l40s")
	require.NoError(t, err)
	require.True(t, match("AD102GL [L40S]"))
	require.False(t, match("GA102GL [RTX A6000]"))
	match, err = productMatcher("/A6000|H100/")
	require.NoError(t, err)
	require.True(t, match("GH100 [H100 PCIe]"))
	require.False(t, match("AD102GL [L40S]"))
	_, err = productMatcher("/[/")
	require.Error(t, err)
}

// Right before a write, the entries are checked again against the
// mappings the cluster has then: another resource of the same apply may
// have mapped the card since the plan.
func TestOverlapsAtWrite_refusesAPassthroughMappingMadeSinceThePlan(t *testing.T) {
	entry := resolvedEntry{PCIMappingEntry: proxmox.PCIMappingEntry{Node: "pve-a6000", Path: "0000:02:00", ID: "10de:2230",
		SubsystemID: "10de:1459", IOMMUGroup: 15}}
	mine := proxmox.PCIMapping{ID: "pool-b", Entries: []proxmox.PCIMappingEntry{entry.PCIMappingEntry}}
	cluster := []proxmox.PCIMapping{
		testHardware().others[0], // a6000-0: 0000:01:00, another card
		mine,                     // itself (an update): not an overlap
		{ID: "pool-a", Entries: []proxmox.PCIMappingEntry{{Node: "pve-a6000", Path: "0000:02:00.0"}}},
	}
	err := only(t, overlapsAtWrite(mine, []resolvedEntry{entry}, cluster), diag.SeverityError)
	require.Contains(t, err, `entries: Device in another mapping: 0000:02:00 on node pve-a6000 is in mapping "pool-a" already (entry 0000:02:00.0)`)

	mine.Mdev = true // a vGPU mapping: a warning
	diags := overlapsAtWrite(mine, []resolvedEntry{entry}, cluster)
	require.False(t, diags.HasError(), "%v", diags)
	require.Contains(t, only(t, diags, diag.SeverityWarning), `is in mapping "pool-a" too`)

	require.False(t, overlapsAtWrite(mine, []resolvedEntry{entry}, cluster[:2]).HasError())
}

func TestPathsOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"0000:41:00", "0000:41:00", true},
		{"0000:41:00", "0000:41:00.1", true},
		{"0000:41:00.0", "0000:41:00", true},
		{"0000:41:00.0", "0000:41:00.1", false},
		{"0000:41:00", "0000:61:00", false},
		{"0000:41:00.0;0000:42:00.0", "0000:42:00", true},
		{"41:00", "0000:41:00.0", true},
	} {
		require.Equal(t, tc.want, pathsOverlap(tc.a, tc.b), "%s %s", tc.a, tc.b)
	}
}
