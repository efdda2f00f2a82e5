package proxmox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// mappingClient acts as a token with Mapping.Modify on /mapping/pci.
func mappingClient(t *testing.T) *Client {
	t.Helper()
	return tokenClient(t)
}

// l40sPoolEntries are pve-l40s-b's two L40S as mapping entries, from its
// hardware.
func l40sPoolEntries(t *testing.T, c *Client) ([]PCIMappingEntry, []PCIFunction) {
	t.Helper()
	fns, err := c.PCIFunctions(testCtx(t), pveemu.NodeL40SB)
	require.NoError(t, err)
	var entries []PCIMappingEntry
	for _, fn := range fns {
		if IsNVIDIAGPU(fn) {
			entries = append(entries, EntryForDevice(pveemu.NodeL40SB, []PCIFunction{fn}, false))
		}
	}
	require.Len(t, entries, 2, "two L40S on %s: %+v", pveemu.NodeL40SB, fns)
	return entries, fns
}

// createdMapping creates m, which must succeed, and deletes it when the
// test ends.
func createdMapping(t *testing.T, c *Client, m PCIMapping) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.DeletePCIMapping(ctx, m.ID); err != nil {
			t.Errorf("cleaning up mapping %s: %v", m.ID, err)
		}
	})
	require.NoError(t, c.CreatePCIMapping(testCtx(t), m))
}

func TestTestbed_mappingCreateReadUpdateDelete(t *testing.T) {
	c, ctx := mappingClient(t), testCtx(t)
	entries, fns := l40sPoolEntries(t, c)
	entries[1].Description = "slot 6"
	m := PCIMapping{ID: "backend-crud", Description: "both L40S", Mdev: true, Entries: entries}
	createdMapping(t, c, m)

	got, found, err := c.ReadPCIMapping(ctx, m.ID)
	require.NoError(t, err)
	require.True(t, found)
	require.NotEmpty(t, got.Digest)
	digest := got.Digest
	got.Digest = ""
	require.Equal(t, m, got, "what was created reads back")
	for _, e := range got.Entries {
		require.Empty(t, got.Check(e, fns), "PVE's check passes: %s", e.Path)
	}
	err = c.CreatePCIMapping(ctx, m)
	require.ErrorContains(t, err, "already defined")

	// Description cleared (delete=description), one entry, live migration on.
	update := PCIMapping{ID: m.ID, Mdev: true, LiveMigrationCapable: true, Entries: entries[:1]}
	require.NoError(t, c.UpdatePCIMapping(ctx, update, digest))
	got, found, err = c.ReadPCIMapping(ctx, m.ID)
	require.NoError(t, err)
	require.True(t, found)
	require.NotEqual(t, digest, got.Digest, "the file changed")
	got.Digest = ""
	require.Equal(t, update, got)

	err = c.UpdatePCIMapping(ctx, m, digest)
	require.Error(t, err, "the digest read before the last update is stale")
	require.Contains(t, err.Error(), "detected modified configuration")

	require.NoError(t, c.DeletePCIMapping(ctx, m.ID))
	_, found, err = c.ReadPCIMapping(ctx, m.ID)
	require.NoError(t, err)
	require.False(t, found)
	require.NoError(t, c.DeletePCIMapping(ctx, m.ID), "gone counts as deleted")
}

func TestTestbed_mappingModifyIsAPermissionError(t *testing.T) {
	s := testbedSettings(t)
	s.TokenID, s.TokenSecret = pveemu.UseOnlyTokenID, pveemu.UseOnlyTokenSecret
	c, err := s.Connect(context.Background())
	require.NoError(t, err)
	ctx := testCtx(t)
	entries, _ := l40sPoolEntries(t, c)

	err = c.CreatePCIMapping(ctx, PCIMapping{ID: "backend-denied", Mdev: true, Entries: entries})
	var pe *PermissionError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "/mapping/pci", pe.Path)
	require.Equal(t, []string{"Mapping.Modify"}, pe.Privileges)

	privs, err := c.MappingPrivileges(ctx, "")
	require.NoError(t, err)
	require.Contains(t, privs, "Mapping.Use")
	require.NotContains(t, privs, "Mapping.Modify")
	privs, err = mappingClient(t).MappingPrivileges(ctx, pveemu.MappingA6000First)
	require.NoError(t, err)
	require.Contains(t, privs, "Mapping.Modify")
	privs, err = rootClient(t).MappingPrivileges(ctx, "anything")
	require.NoError(t, err)
	require.True(t, privs["Mapping.Modify"])
}

// poolVM is a VM on pve-l40s-b cloned from its template with one GPU of
// pool mapping.
func poolVM(name, mapping string) VMSpec {
	spec := gpuVM(name, GPU{Mapping: mapping, PCIE: true, ROMBar: true})
	spec.Node = pveemu.NodeL40SB
	return spec
}

func TestTestbed_poolVMsGetDistinctDevicesAndTheThirdIsRefused(t *testing.T) {
	c := mappingClient(t)
	entries, _ := l40sPoolEntries(t, c)
	pool := PCIMapping{ID: "backend-pool", Description: "two L40S", Mdev: true, Entries: entries}
	createdMapping(t, c, pool)

	got := map[string]int{}
	var vmids []int
	for _, name := range []string{"pool-a", "pool-b"} {
		_, vm := createdVM(t, c, poolVM(name, pool.ID))
		devices, err := c.VMHostDevices(testCtx(t), vm.Node, vm.VMID)
		require.NoError(t, err)
		require.Len(t, devices, 1, "%s: %v", name, devices)
		got[devices[0]] = vm.VMID
		vmids = append(vmids, vm.VMID)
	}
	require.Equal(t, map[string]int{entries[0].Path: vmids[0], entries[1].Path: vmids[1]}, got,
		"the first free entry each, in the mapping's order")

	plain := poolVM("no-gpu", pool.ID)
	plain.GPUs = nil
	_, plainVM := createdVM(t, c, plain)

	third := poolVM("pool-c", pool.ID)
	facts, err := c.ReadNodeFacts(testCtx(t), third.Node, third.GPUs)
	require.NoError(t, err)
	read := map[int]map[int]string{}
	for _, g := range facts.Guests {
		if g.HostDevices != nil {
			read[g.VMID] = g.HostDevices
		}
	}
	require.Equal(t, map[int]map[int]string{vmids[0]: {0: entries[0].Path}, vmids[1]: {0: entries[1].Path}}, read,
		"the monitor is read for the running guests using the pool, not for VM %d", plainVM.VMID)
	for _, d := range facts.Pool(pool.ID, third.Node) {
		require.NotNil(t, d.Holder, "%s held", d.Entry.Path)
		require.Equal(t, got[d.Entry.Path], d.Holder.Guest.VMID)
		require.Equal(t, d.Entry.Path, d.Holder.Device)
	}
	findings := Preflight(PreflightVM{Node: third.Node}, third.GPUs, facts)
	require.Len(t, findings, 1, "%+v", findings)
	require.Equal(t, FindingPoolExhausted, findings[0].Kind)
	var holders []int
	for _, h := range findings[0].Holders {
		holders = append(holders, h.Guest.VMID)
	}
	require.ElementsMatch(t, vmids, holders)

	// PVE agrees: the third VM is created but cannot start.
	vm, err := c.CreateVM(testCtx(t), third)
	deleteAtEnd(t, c, vm.Node, vm.VMID)
	var te *TaskError
	require.ErrorAs(t, err, &te)
	require.True(t, strings.Contains(te.ExitStatus+strings.Join(te.Log, "\n"), "could not find a free device for 'hostpci0'"), "%v", err)
}

// TestTestbed_vgpuPoolCountsInstancesDown passes the one-instance L40S-48Q
// type through a vGPU mapping of both L40S: each VM's vGPU goes to the
// first card with an instance left, and a third VM is refused at preflight
// as PVE refuses its start.
func TestTestbed_vgpuPoolCountsInstancesDown(t *testing.T) {
	c := mappingClient(t)
	entries, _ := l40sPoolEntries(t, c)
	m := PCIMapping{ID: "backend-vgpu", Mdev: true, Entries: entries}
	createdMapping(t, c, m)
	gpus := []GPU{{Mapping: m.ID, Mdev: "nvidia-1159", PCIE: true, ROMBar: true}}
	spec := func(name string) VMSpec {
		s := gpuVM(name, gpus...)
		s.Node = pveemu.NodeL40SB
		return s
	}
	left := func() []int {
		facts, err := c.ReadNodeFacts(testCtx(t), pveemu.NodeL40SB, gpus)
		require.NoError(t, err)
		var out []int
		for _, e := range entries {
			for _, typ := range facts.Mdev[e.Path] {
				if typ.Type == "nvidia-1159" {
					out = append(out, typ.Available)
				}
			}
		}
		return out
	}
	require.Equal(t, []int{1, 1}, left())
	createdVM(t, c, spec("vgpu-a"))
	require.Equal(t, []int{0, 1}, left(), "the first card with an instance left")
	createdVM(t, c, spec("vgpu-b"))
	require.Equal(t, []int{0, 0}, left())

	facts, err := c.ReadNodeFacts(testCtx(t), pveemu.NodeL40SB, gpus)
	require.NoError(t, err)
	findings := Preflight(PreflightVM{Node: pveemu.NodeL40SB}, gpus, facts)
	require.Len(t, findings, 1, "%+v", findings)
	require.Equal(t, FindingMdevTypeUsedUp, findings[0].Kind)
	require.Equal(t, GPUField(FieldGPUMdev, 0), findings[0].Field)

	vm, err := c.CreateVM(testCtx(t), spec("vgpu-c"))
	deleteAtEnd(t, c, vm.Node, vm.VMID)
	var te *TaskError
	require.ErrorAs(t, err, &te, "PVE refuses the third start too")
	require.Equal(t, "could not create mediated device", te.ExitStatus, "qemu-server PVE/QemuServer.pm vm_start_nolock")
}
