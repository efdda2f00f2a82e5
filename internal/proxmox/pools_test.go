package proxmox

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// poolFacts is node pve-l40s-b (l40sFunctions) with mapping "l40s-pool"
// holding both L40S there (a pool; mdev set, as PVE's check wants for
// mdev-capable cards, but used for passthrough), "l40s-vgpu" the same two
// for vGPUs, and "a6000" its A6000 alone; guests as each test gives them.
func poolFacts(guests ...Guest) *NodeFacts {
	fns := l40sFunctions()
	l40s := []PCIMappingEntry{EntryForDevice("pve-l40s-b", fns[0:1], false), EntryForDevice("pve-l40s-b", fns[1:2], false)}
	return &NodeFacts{
		Node: "pve-l40s-b", Identity: Identity{User: "root@pam"}, Functions: fns,
		Mappings: []PCIMapping{
			{ID: "a6000", Entries: []PCIMappingEntry{EntryForDevice("pve-l40s-b", fns[2:4], true)}},
			{ID: "l40s-pool", Mdev: true, Entries: append([]PCIMappingEntry{{Node: "elsewhere", Path: "0000:01:00.0"}}, l40s...)},
			{ID: "l40s-vgpu", Mdev: true, Entries: l40s},
		},
		Guests: guests,
		Mdev: map[string][]MdevType{
			"0000:41:00.0": {{Type: "nvidia-1155", Name: "NVIDIA L40S-4Q", Available: 0}},
			"0000:61:00.0": {{Type: "nvidia-1155", Name: "NVIDIA L40S-4Q", Available: 3}},
		},
	}
}

// running is a running guest on pve-l40s-b with hostpci0 = value, and the
// device the monitor reported for it ("": not read).
func running(vmid int, name, value, device string) Guest {
	g := Guest{Node: "pve-l40s-b", VMID: vmid, Name: name, Status: "running", HostPCI: map[int]string{0: value}}
	if device != "" {
		g.HostDevices = map[int]string{0: device}
	}
	return g
}

func TestPoolPreflight(t *testing.T) {
	pool := GPU{Mapping: "l40s-pool", PCIE: true, ROMBar: true}
	onB := PreflightVM{Node: "pve-l40s-b"}
	holder41 := running(201, "train-a", "mapping=l40s-pool,pcie=1", "0000:41:00.0")
	holder61 := running(202, "train-b", "mapping=l40s-pool,pcie=1", "0000:61:00.0")
	unknown := running(203, "train-c", "mapping=l40s-pool,pcie=1", "")
	type want struct {
		Kind    FindingKind
		Field   Field
		Holders []int // VM IDs
		Problem string
	}
	for _, tc := range []struct {
		description string
		vm          PreflightVM
		gpus        []GPU
		guests      []Guest
		change      func(f *NodeFacts)
		want        []want
	}{
		{"an empty pool passes", onB, []GPU{pool}, nil, nil, nil},
		{"one of two held passes", onB, []GPU{pool}, []Guest{holder61}, nil, nil},
		{"both held by running VMs: exhausted, naming them", onB, []GPU{pool}, []Guest{holder61, holder41}, nil,
			[]want{{Kind: FindingPoolExhausted, Field: GPUField(FieldGPUMapping, 0), Holders: []int{201, 202}}}},
		{"the VM itself holding one leaves it its own", PreflightVM{Node: "pve-l40s-b", VMID: 202}, []GPU{pool}, []Guest{holder61, holder41}, nil, nil},
		{"so does its predecessor of its name", PreflightVM{Node: "pve-l40s-b", OwnName: "train-a"}, []GPU{pool}, []Guest{holder61, holder41}, nil, nil},
		{"a stopped VM holds nothing", onB, []GPU{pool}, []Guest{holder61, {Node: "pve-l40s-b", VMID: 204, Status: "stopped",
			HostPCI: map[int]string{0: "mapping=l40s-pool"}}}, nil, nil},
		{"a VM on another node holds nothing here", onB, []GPU{pool}, []Guest{holder61, {Node: "pve", VMID: 205, Status: "running",
			HostPCI: map[int]string{0: "mapping=l40s-pool"}, HostDevices: map[int]string{0: "0000:41:00.0"}}}, nil, nil},
		{"a raw address holds the entry too", onB, []GPU{pool}, []Guest{holder61, running(206, "raw", "0000:41:00.0,pcie=1", "")}, nil,
			[]want{{Kind: FindingPoolExhausted, Field: GPUField(FieldGPUMapping, 0), Holders: []int{206, 202}}}},
		{"a running VM of the pool whose device is unknown counts against it", onB, []GPU{pool}, []Guest{holder41, unknown}, nil,
			[]want{{Kind: FindingPoolExhausted, Field: GPUField(FieldGPUMapping, 0), Holders: []int{201, 203}}}},
		{"one unknown of two free leaves one", onB, []GPU{pool}, []Guest{unknown}, nil, nil},
		{"two GPUs of the VM take two entries", onB, []GPU{pool, pool}, []Guest{holder41}, nil,
			[]want{{Kind: FindingPoolExhausted, Field: GPUField(FieldGPUMapping, 1), Holders: []int{201}}}},
		{"two GPUs of an empty pool pass", onB, []GPU{pool, pool}, nil, nil, nil},
		{"an entry PVE's check fails is invalid, whoever holds what", onB, []GPU{pool}, nil, func(f *NodeFacts) {
			f.Mappings[1].Entries[2].IOMMUGroup = 7
		}, []want{{Kind: FindingMappingInvalid, Field: GPUField(FieldGPUMapping, 0), Problem: "'iommugroup' does not match for 'l40s-pool' (51 != 7)"}}},
		{"a pool of mdev-capable cards not marked mdev fails qemu-server's check", onB, []GPU{pool}, nil, func(f *NodeFacts) {
			f.Mappings[1].Mdev = false
		}, []want{{Kind: FindingMappingInvalid, Field: GPUField(FieldGPUMapping, 0), Problem: "'mdev' does not match for 'l40s-pool' (1 != 0)"}}},
		{"a passthrough mapping of mdev-capable cards fails the mdev check", onB, []GPU{{Mapping: "a6000"}}, nil, func(f *NodeFacts) {
			f.Functions[2].MdevCapable = true
		}, []want{{Kind: FindingMappingInvalid, Field: GPUField(FieldGPUMapping, 0), Problem: "'mdev' does not match for 'a6000' (1 != 0)"}}},
		{"a vGPU of a pool goes where instances are left", onB, []GPU{{Mapping: "l40s-vgpu", Mdev: "nvidia-1155"}}, []Guest{holder41, holder61}, nil, nil},
		{"a vGPU of a pool with none left anywhere", onB, []GPU{{Mapping: "l40s-vgpu", Mdev: "nvidia-1155"}}, nil, func(f *NodeFacts) {
			f.Mdev["0000:61:00.0"][0].Available = 0
		}, []want{{Kind: FindingMdevTypeUsedUp, Field: GPUField(FieldGPUMdev, 0)}}},
		{"a single-entry mapping held is GPU held, as before", onB, []GPU{{Mapping: "a6000"}}, []Guest{running(207, "a", "mapping=a6000", "")}, nil,
			[]want{{Kind: FindingGPUHeld, Field: GPUField(FieldGPUMapping, 0)}}},
	} {
		t.Run(tc.description, func(t *testing.T) {
			facts := poolFacts(tc.guests...)
			if tc.change != nil {
				tc.change(facts)
			}
			var got []want
			for _, f := range Preflight(tc.vm, tc.gpus, facts) {
				w := want{Kind: f.Kind, Field: f.Field, Problem: f.Problem}
				for _, h := range f.Holders {
					w.Holders = append(w.Holders, h.Guest.VMID)
				}
				got = append(got, w)
				if f.Kind == FindingPoolExhausted {
					require.True(t, f.Conflict())
					require.Equal(t, "l40s-pool", f.Mapping.ID)
				}
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestPoolSaysWhoHoldsEachEntry(t *testing.T) {
	facts := poolFacts(running(201, "train-a", "mapping=l40s-pool,pcie=1", "0000:61:00.0"), running(203, "train-c", "mapping=l40s-pool", ""))
	devices := facts.Pool("l40s-pool", "pve-l40s-b")
	require.Len(t, devices, 2)
	require.Equal(t, "0000:41:00.0", devices[0].Entry.Path, "the mapping's order")
	require.Nil(t, devices[0].Holder)
	require.Len(t, devices[0].Maybe, 1, "VM 203's device is unknown: it may hold the free one")
	require.Equal(t, 203, devices[0].Maybe[0].Guest.VMID)
	require.NotNil(t, devices[1].Holder)
	require.Equal(t, 201, devices[1].Holder.Guest.VMID)
	require.Equal(t, "0000:61:00.0", devices[1].Holder.Device)
	require.Equal(t, "hostpci0: mapping=l40s-pool,pcie=1", devices[1].Holder.Line)
	require.Equal(t, "VM 201 (train-a) on 0000:61:00.0, VM 203 (train-c)", DescribeHolders([]Holder{*devices[1].Holder, devices[0].Maybe[0]}))
	require.Nil(t, facts.Pool("l40s-pool", "pve"))
	require.Nil(t, facts.Pool("nope", "pve-l40s-b"))
	require.True(t, facts.IsPool("l40s-pool", "pve-l40s-b"))
	require.False(t, facts.IsPool("a6000", "pve-l40s-b"))
}

func TestHeldByCountsAPoolGuestByItsDevice(t *testing.T) {
	facts := poolFacts(running(201, "a", "mapping=l40s-pool", "0000:61:00.0"), running(203, "c", "mapping=l40s-pool", ""))
	h, ok := facts.HeldBy("pve-l40s-b", facts.DeviceFunctions("0000:61:00.0"), true, nil)
	require.True(t, ok)
	require.Equal(t, 201, h.Guest.VMID)
	_, ok = facts.HeldBy("pve-l40s-b", facts.DeviceFunctions("0000:41:00.0"), true, nil)
	require.False(t, ok, "VM 203 may hold it, but nobody knows: not counted as held")
	require.Equal(t, "0000:61:00.0", facts.GuestGPUFunction("pve-l40s-b", 201, 0))
	require.Empty(t, facts.GuestGPUFunction("pve-l40s-b", 203, 0), "unknown")
	require.Empty(t, facts.GPUFunction(GPU{Mapping: "l40s-pool"}, "pve-l40s-b"), "a pool's device is chosen at start")
	require.Equal(t, "0000:81:00.0", facts.GPUFunction(GPU{Mapping: "a6000"}, "pve-l40s-b"))
}
