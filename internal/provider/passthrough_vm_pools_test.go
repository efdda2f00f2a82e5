package provider

import (
	"context"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// poolFacts is a node like the emulator's pve-l40s-b: two L40S, each in an
// IOMMU group of its own and able to make vGPUs, both in mapping
// "l40s-pool" (a GPU pool) and in "l40s-vgpu-pool", and the second in
// "l40s-one". Every mapping is marked mdev, as PVE 9 requires of a mapping
// of mdev-capable devices even when VMs take them whole (assert_valid
// compares the flags at each start); held lists the running VMs on the
// pool with the device each was given (VM 201 "pool-a", 202 "pool-b", in
// that order), and VM 203 "pool-c" is on the pool, stopped.
func poolFacts(held ...string) *proxmox.NodeFacts {
	l40s := func(addr string, group int) proxmox.PCIFunction {
		return proxmox.PCIFunction{Node: "pve-b", Address: addr, VendorID: "0x10de", DeviceID: "0x26b9", SubsystemVendorID: "0x10de",
			SubsystemDeviceID: "0x1851", Class: "0x030200", DeviceName: "AD102GL [L40S]", IOMMUGroup: group, MdevCapable: true}
	}
	entry := func(path string, group int) proxmox.PCIMappingEntry {
		return proxmox.PCIMappingEntry{Node: "pve-b", Path: path, ID: "10de:26b9", SubsystemID: "10de:1851", IOMMUGroup: group}
	}
	facts := &proxmox.NodeFacts{
		Node:      "pve-b",
		Identity:  rootPam,
		Functions: []proxmox.PCIFunction{l40s("0000:41:00.0", 50), l40s("0000:61:00.0", 51)},
		Mappings: []proxmox.PCIMapping{
			{ID: "l40s-pool", Mdev: true, Entries: []proxmox.PCIMappingEntry{entry("0000:41:00.0", 50), entry("0000:61:00.0", 51)}},
			{ID: "l40s-vgpu-pool", Mdev: true, Entries: []proxmox.PCIMappingEntry{entry("0000:41:00.0", 50), entry("0000:61:00.0", 51)}},
			{ID: "l40s-one", Mdev: true, Entries: []proxmox.PCIMappingEntry{entry("0000:61:00.0", 51)}},
		},
		Guests: []proxmox.Guest{
			{Node: "pve-b", VMID: 203, Name: "pool-c", Status: "stopped", HostPCI: map[int]string{0: "mapping=l40s-pool,pcie=1,rombar=1"}},
		},
	}
	for i, address := range held {
		facts.Guests = append(facts.Guests, proxmox.Guest{
			Node: "pve-b", VMID: 201 + i, Name: []string{"pool-a", "pool-b"}[i], Status: "running",
			HostPCI: map[int]string{0: "mapping=l40s-pool,pcie=1,rombar=1"}, HostDevices: map[int]string{0: address},
		})
	}
	return facts
}

var poolGPU = []proxmox.GPU{{Mapping: "l40s-pool", PCIE: true, ROMBar: true}}

// A new VM with two GPUs from a two-device pool, one device held by
// another VM: the second GPU finds none, and the message names the one
// holder and the VM's own first GPU, never the VM itself nor a "free"
// device.
func TestPassthroughVMPoolExhaustedByTheVMsOwnGPUsSaysSo(t *testing.T) {
	planned := preflightVM{node: "pve-b", planned: true, name: "pool-d", starting: true}
	diags := preflightDiagnostics(planned, append(slices.Clone(poolGPU), poolGPU...), poolFacts("0000:41:00.0"))
	require.Equal(t, []string{"gpu[1].mapping"}, errorPaths(diags), errorDetails(diags))
	detail := errorDetails(diags)
	require.Contains(t, detail, `0000:41:00.0 (VM 201 "pool-a", running: hostpci0: mapping=l40s-pool,pcie=1,rombar=1); this VM's earlier GPUs on the pool take the other 1`)
	require.NotContains(t, detail, "(free)")
	require.NotContains(t, detail, "pool-d")
}

// A new VM to be started on a pool whose every device runs elsewhere is
// refused at plan, naming each holder and the fixes; with a device free,
// or a VM that stays stopped, nothing is found.
func TestPassthroughVMPoolWithNoFreeDeviceIsRefusedAtPlan(t *testing.T) {
	planned := preflightVM{node: "pve-b", planned: true, name: "pool-d", starting: true}
	diags := preflightDiagnostics(planned, poolGPU, poolFacts("0000:41:00.0", "0000:61:00.0"))
	require.Equal(t, []string{"gpu[0].mapping"}, errorPaths(diags), errorDetails(diags))
	detail := errorDetails(diags)
	require.Contains(t, detail, `gpu[0].mapping "l40s-pool" is a pool of 2 devices on node pve-b, and running VMs hold every one`)
	require.Contains(t, detail, `0000:41:00.0 (VM 201 "pool-a", running: hostpci0: mapping=l40s-pool,pcie=1,rombar=1)`)
	require.Contains(t, detail, `0000:61:00.0 (VM 202 "pool-b", running`)
	require.Contains(t, detail, "could not find a free device for 'hostpci0'")
	require.Contains(t, detail, "Stop one of those VMs (started = false")
	require.Contains(t, detail, "add a device to the mapping")
	require.Contains(t, detail, "another node")
	require.Contains(t, detail, "-refresh=false", "how to destroy while the pool is full")

	stays := planned
	stays.starting = false
	require.Empty(t, preflightDiagnostics(stays, poolGPU, poolFacts("0000:41:00.0", "0000:61:00.0")), "a VM that stays stopped holds nothing")

	diags = preflightDiagnostics(planned, poolGPU, poolFacts("0000:61:00.0"))
	require.False(t, diags.HasError(), "one device is free: "+errorDetails(diags))

	apply := preflightVM{node: "pve-b", starting: true}
	require.Equal(t, []string{"gpu[0].mapping"}, errorPaths(preflightDiagnostics(apply, poolGPU, poolFacts("0000:41:00.0", "0000:61:00.0"))),
		"the apply refuses it before any write too")
}

// A VM that exists already (in the state, or the tainted leftover of a
// failed start, recognized by its name on the node) gets a warning at plan
// for a full pool, not an error: Terraform plans the configuration before
// a destroy, which an error would stop. The apply still refuses the start.
func TestPassthroughVMFullPoolIsAWarningAtPlanForAVMThatExists(t *testing.T) {
	full := poolFacts("0000:41:00.0", "0000:61:00.0")
	for what, vm := range map[string]preflightVM{
		"an update of VM 203":            {node: "pve-b", vmid: 203, planned: true, starting: true},
		"the replacement of tainted 203": {node: "pve-b", name: "pool-c", planned: true, starting: true},
	} {
		diags := preflightDiagnostics(vm, poolGPU, full)
		require.False(t, diags.HasError(), "%s: %s", what, errorDetails(diags))
		require.Len(t, diags, 1, what)
		require.Equal(t, "GPU pool has no free device", diags[0].Summary(), what)
		require.Contains(t, diags[0].Detail(), "the apply stops before changing anything while this still holds", what)
	}
	apply := preflightVM{node: "pve-b", vmid: 203, starting: true}
	require.Equal(t, []string{"gpu[0].mapping"}, errorPaths(preflightDiagnostics(apply, poolGPU, full)), "the apply refuses the start")
}

// A VM already on the pool keeps the device it has: an update of VM 202
// sees the pool with one device held by another VM and one by itself.
func TestPassthroughVMPoolCountsTheVMsOwnDeviceAsItsOwn(t *testing.T) {
	update := preflightVM{node: "pve-b", vmid: 202, planned: true, starting: true}
	diags := preflightDiagnostics(update, poolGPU, poolFacts("0000:41:00.0", "0000:61:00.0"))
	require.Empty(t, diags, errorDetails(diags))
}

// An entry of the mapping that no longer matches the node's hardware
// (PVE's assert_valid, run at every start) is an error on the mapping.
func TestPassthroughVMInvalidMappingEntryIsRefused(t *testing.T) {
	facts := poolFacts()
	facts.Mappings[0].Entries[1].IOMMUGroup = 52 // the card moved
	diags := preflightDiagnostics(preflightVM{node: "pve-b", starting: true}, poolGPU, facts)
	require.Equal(t, []string{"gpu[0].mapping"}, errorPaths(diags), errorDetails(diags))
	require.Contains(t, errorDetails(diags), `gpu[0].mapping "l40s-pool": its entry 0000:61:00.0 on node pve-b does not match the node's hardware`)
	require.Contains(t, errorDetails(diags), "PCI device mapping invalid (hardware probably changed)")
}

// gpus says which device of a pool a running VM was given (from its QEMU
// monitor), nothing for a stopped one, and what each may be given.
func TestPassthroughVMGPUStatusesOfAPool(t *testing.T) {
	facts := poolFacts("0000:61:00.0")
	running := proxmox.VM{VMSpec: proxmox.VMSpec{Node: "pve-b", VMID: 201}, Status: "running",
		HostPCI: map[int]string{0: "mapping=l40s-pool,pcie=1,rombar=1", 1: "mapping=l40s-one,pcie=1,rombar=1"}}
	got := gpuStatuses(running, asRead(facts, running))
	require.Equal(t, passthroughGPUStatusModel{HostPCI: "hostpci0", Value: "mapping=l40s-pool,pcie=1,rombar=1", PCIAddress: "0000:61:00.0",
		VendorID: "0x10de", DeviceID: "0x26b9", Product: "AD102GL [L40S]", IOMMUGroup: 51, Candidates: []string{"0000:41:00.0", "0000:61:00.0"}}, got[0])
	require.Equal(t, "0000:61:00.0", got[1].PCIAddress, "a mapping with one entry resolves to it")
	require.Equal(t, []string{"0000:61:00.0"}, got[1].Candidates)

	stopped := proxmox.VM{VMSpec: proxmox.VMSpec{Node: "pve-b", VMID: 203}, Status: "stopped", HostPCI: map[int]string{0: "mapping=l40s-pool,pcie=1,rombar=1"}}
	got = gpuStatuses(stopped, asRead(facts, stopped))
	require.Empty(t, got[0].PCIAddress, "a stopped VM on a pool holds none of its devices")
	require.Equal(t, int64(-1), got[0].IOMMUGroup)
	require.Equal(t, []string{"0000:41:00.0", "0000:61:00.0"}, got[0].Candidates)

	raw := proxmox.VM{VMSpec: proxmox.VMSpec{Node: "pve-b", VMID: 204}, HostPCI: map[int]string{0: "0000:41:00,pcie=1"}}
	require.Equal(t, []string{"0000:41:00"}, gpuStatuses(raw, nil)[0].Candidates)
}

// asRead is facts with live recorded as readFacts records the VM: a guest
// with its hostpci lines, keeping the devices its monitor reported.
func asRead(facts *proxmox.NodeFacts, live proxmox.VM) *proxmox.NodeFacts {
	for i, g := range facts.Guests {
		if g.Node == live.Node && g.VMID == live.VMID {
			facts.Guests[i].HostPCI = live.HostPCI
			return facts
		}
	}
	facts.Guests = append(facts.Guests, proxmox.Guest{Node: live.Node, VMID: live.VMID, Status: live.Status, HostPCI: live.HostPCI})
	return facts
}

// pci_mappings lists each device of a pool with the running VM holding it,
// counts the free ones per node, and the vGPU instances left on each
// device of an mdev mapping.
func TestInventoryPCIMappingsShowPoolsInUseAndFree(t *testing.T) {
	facts := poolFacts("0000:61:00.0")
	nodes := map[string]mappingNodeFacts{"pve-b": {facts: facts, mdev: map[string][]proxmox.MdevType{
		"0000:41:00.0": {{Type: "nvidia-1155", Name: "NVIDIA L40S-12Q", Available: 3}},
		"0000:61:00.0": {{Type: "nvidia-1155", Name: "NVIDIA L40S-12Q", Available: 4}},
	}}}
	got := inventoryPCIMappings(facts.Mappings, nodes)
	require.Len(t, got, 3)

	pool := got[0]
	require.Equal(t, "l40s-pool", pool.ID)
	require.Len(t, pool.Entries, 2)
	free, held := pool.Entries[0], pool.Entries[1]
	require.Equal(t, "0000:41:00.0", free.Path)
	require.False(t, free.InUse)
	require.Nil(t, free.VMID)
	require.Nil(t, free.VMName)
	require.True(t, free.Valid)
	require.Nil(t, free.Problem)
	require.Equal(t, "AD102GL [L40S]", free.Product)
	require.True(t, held.InUse)
	require.Equal(t, int64(201), *held.VMID)
	require.Equal(t, "pool-a", *held.VMName)
	require.Equal(t, []inventoryPCIMappingNodeModel{{Node: "pve-b", Devices: 2, Free: 1}}, pool.Nodes)

	vgpu := got[1]
	require.True(t, vgpu.Mdev)
	require.Equal(t, int64(3), vgpu.Entries[0].MdevTypes[0].Available)
	require.Equal(t, int64(4), vgpu.Entries[1].MdevTypes[0].Available)

	require.True(t, got[2].Entries[0].InUse, "a device in use through another mapping is in use")

	facts = poolFacts()
	facts.Mappings[2].Entries[0].IOMMUGroup = 52 // l40s-one's card moved
	one := inventoryPCIMappings(facts.Mappings, map[string]mappingNodeFacts{"pve-b": {facts: facts}})[2]
	require.False(t, one.Entries[0].Valid)
	require.NotEmpty(t, *one.Entries[0].Problem)
	require.Equal(t, []inventoryPCIMappingNodeModel{{Node: "pve-b", Devices: 1, Free: 0}}, one.Nodes, "an invalid entry is not free")
}

// gpus is known in a plan that changes the VM only when every GPU is a
// raw address and they stay the same: a GPU by mapping resolves through
// the mapping's entries, which the same apply may change (a
// gpu_pci_mapping adding a card to the pool), and a pool gives a device at
// each start.
func TestPassthroughVMPlannedGPUsAreUnknownForAMappingOrAGPUChange(t *testing.T) {
	ctx := context.Background()
	gpu := func(mapping, address string) passthroughGPUModel {
		g := passthroughGPUModel{Mapping: types.StringNull(), PCIAddress: types.StringNull()}
		if mapping != "" {
			g.Mapping = types.StringValue(mapping)
		}
		if address != "" {
			g.PCIAddress = types.StringValue(address)
		}
		return g
	}
	model := func(memory int64, gpus ...passthroughGPUModel) *passthroughVMModel {
		statuses, diags := types.ListValueFrom(ctx, passthroughGPUStatusObjectType,
			[]passthroughGPUStatusModel{{HostPCI: "hostpci0", Candidates: []string{"0000:41:00.0"}}})
		require.False(t, diags.HasError())
		return &passthroughVMModel{MemoryMiB: types.Int64Value(memory), GPU: gpus, GPUs: statuses}
	}

	raw := gpu("", "0000:41:00")
	state := model(8192, raw)
	require.Equal(t, state.GPUs, plannedGPUs(state, model(16384, raw)), "raw addresses resolve to the same devices")

	mapped := gpu("l40s-pool", "")
	require.True(t, plannedGPUs(model(8192, mapped), model(16384, mapped)).IsUnknown(),
		"the same apply may add an entry to the mapping: candidates would gain one")
	require.True(t, plannedGPUs(model(8192, raw, mapped), model(16384, raw, mapped)).IsUnknown(), "any GPU by mapping")
	require.True(t, plannedGPUs(state, model(8192, gpu("", "0000:61:00"))).IsUnknown(), "the GPUs change")
	require.True(t, plannedGPUs(nil, model(8192, raw)).IsUnknown(), "a create")
}
