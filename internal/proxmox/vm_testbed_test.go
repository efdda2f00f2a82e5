package proxmox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

func TestTestbed_identities(t *testing.T) {
	require.Equal(t, Identity{User: "terraform@pve", TokenID: "role", IsToken: true}, tokenClient(t).Identity())
	root := rootClient(t).Identity()
	require.Equal(t, Identity{User: "root@pam"}, root)
	require.True(t, root.IsRootPam())
}

func TestTestbed_untrustedCAIsRefused(t *testing.T) {
	s := testbedSettings(t)
	s.CACertificatePEM = ""
	s.Username, s.Password = "root@pam", "x"
	_, err := s.Connect(testCtx(t))
	require.ErrorContains(t, err, "certificate", "the testbed's certificate is not in the system roots")
}

func TestTestbed_wrongPasswordIsRefused(t *testing.T) {
	s := testbedSettings(t)
	s.Username, s.Password = "root@pam", "not-the-password"
	s.Credentials = Credentials{Username: "PM_USER", Password: "PM_PASS"}
	_, err := s.Connect(testCtx(t))
	var rejected *CredentialsError
	require.ErrorAs(t, err, &rejected)
	require.ErrorContains(t, err, "logging in to Proxmox VE as root@pam")
	require.ErrorContains(t, err, "rejected the login of root@pam (username from PM_USER) (401 authentication failure)")
	require.ErrorContains(t, err, "fix PM_PASS, or PM_USER")
	require.NotContains(t, err.Error(), "not-the-password")
}

func TestTestbed_inventory(t *testing.T) {
	c, ctx := tokenClient(t), testCtx(t)

	fns, err := c.PCIFunctions(ctx, "pve-a6000")
	require.NoError(t, err)
	var gpu *PCIFunction
	for i := range fns {
		if fns[i].Address == "0000:01:00.0" {
			gpu = &fns[i]
		}
	}
	require.NotNil(t, gpu, "0000:01:00.0 listed: %+v", fns)
	require.Equal(t, "0x10de", gpu.VendorID)
	require.Equal(t, "0x2230", gpu.DeviceID)
	require.Equal(t, "0x030000", gpu.Class)
	require.Equal(t, 14, gpu.IOMMUGroup)

	mappings, err := c.PCIMappings(ctx)
	require.NoError(t, err)
	found := false
	for _, m := range mappings {
		if m.ID == "a6000-0" {
			found = true
			require.NotEmpty(t, m.Entries)
			require.Equal(t, "pve-a6000", m.Entries[0].Node)
			require.Equal(t, "0000:01:00", m.Entries[0].Path)
		}
	}
	require.True(t, found, "mapping a6000-0 listed: %+v", mappings)

	types, err := c.MdevTypes(ctx, "pve-l40s", "0000:c1:00.0")
	require.NoError(t, err)
	require.NotEmpty(t, types)
	require.Positive(t, types[0].Available)

	guests, err := c.Guests(ctx)
	require.NoError(t, err)
	var template bool
	for _, g := range guests {
		if g.VMID == 9000 && g.Node == "pve-a6000" {
			template = true
		}
	}
	require.True(t, template, "template 9000 on pve-a6000 listed: %+v", guests)

	perms, err := c.Permissions(ctx, "/mapping/pci")
	require.NoError(t, err)
	require.Contains(t, perms, "Mapping.Use")

	nodes, err := c.Nodes(ctx)
	require.NoError(t, err)
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	require.Subset(t, names, []string{"pve-a6000", "pve-h100", "pve-l40s", "pve-cpu"})

	id, err := c.NextVMID(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, id, 100)
}

func TestTestbed_tokenCreatesAndStartsVMWithMappedGPU(t *testing.T) {
	c, ctx := tokenClient(t), testCtx(t)
	spec := gpuVM("mapped-gpu", GPU{Mapping: "a6000-0", PCIE: true, ROMBar: true, AllFunctions: true})

	vm, err := c.CreateVM(ctx, spec)
	deleteAtEnd(t, c, vm.Node, vm.VMID)
	require.NoError(t, err)
	require.NotZero(t, vm.VMID)
	require.Equal(t, "running", vm.Status)
	require.Equal(t, map[int]string{0: "mapping=a6000-0,pcie=1,rombar=1"}, vm.HostPCI)
	require.Equal(t, spec.GPUs, vm.GPUs)

	config, ok := emu.VMConfig("pve-a6000", vm.VMID)
	require.True(t, ok)
	require.Equal(t, "mapping=a6000-0,pcie=1,rombar=1", config["hostpci0"])
	require.Equal(t, "0", config["balloon"], "ballooning off")
	require.Equal(t, "q35", config["machine"])
	require.Contains(t, config["efidisk0"], "local-lvm:")
	require.Equal(t, "running", emu.VMStatus("pve-a6000", vm.VMID))

	back, found, err := c.ReadVM(ctx, "pve-a6000", vm.VMID)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, vm.VMSpec, back.VMSpec)
	require.Equal(t, "ovmf", back.BIOS)
	require.Equal(t, 16384, back.MemoryMiB)
	require.Equal(t, []string{pveemu.GuestIPv4(vm.VMID)}, back.IPv4, "eth0's address from the guest agent, lo left out")
}

func TestTestbed_rootCreatesVMWithRawGPU(t *testing.T) {
	c, ctx := rootClient(t), testCtx(t)
	spec := gpuVM("raw-gpu", GPU{PCIAddress: "0000:02:00.0", AllFunctions: true, PCIE: true, PrimaryGPU: true, ROMBar: true})
	spec.Clone = nil // a fresh VM
	spec.CloudInit = nil
	spec.Disks = []Disk{{Interface: "scsi0", Storage: "local-lvm", SizeGiB: 32}}

	vm, err := c.CreateVM(ctx, spec)
	deleteAtEnd(t, c, vm.Node, vm.VMID)
	require.NoError(t, err)
	require.Equal(t, "running", vm.Status)
	require.Equal(t, map[int]string{0: "0000:02:00,pcie=1,x-vga=1,rombar=1"}, vm.HostPCI)
	require.Equal(t, []GPU{{PCIAddress: "0000:02:00", AllFunctions: true, PCIE: true, PrimaryGPU: true, ROMBar: true}}, vm.GPUs)
	require.Equal(t, []Disk{{Interface: "scsi0", Storage: "local-lvm", SizeGiB: 32}}, vm.Disks)
}

func TestTestbed_tokenRawGPUIsRefusedAndTheVMKept(t *testing.T) {
	c, ctx := tokenClient(t), testCtx(t)
	spec := gpuVM("token-raw", GPU{PCIAddress: "0000:02:00.0", AllFunctions: true, PCIE: true, ROMBar: true})

	vm, err := c.CreateVM(ctx, spec)
	deleteAtEnd(t, c, vm.Node, vm.VMID)
	require.ErrorContains(t, err, "only root can set 'hostpci0' config for non-mapped devices")
	require.NotZero(t, vm.VMID, "the VM exists (cloned before the config was refused) and is returned")
	require.Equal(t, "stopped", emu.VMStatus("pve-a6000", vm.VMID))
	config, ok := emu.VMConfig("pve-a6000", vm.VMID)
	require.True(t, ok)
	require.NotContains(t, config, "hostpci0")
}

func TestTestbed_rootTokenRawGPUIsRefused(t *testing.T) {
	// root@pam's own token is not root@pam to PVE's hostpci check.
	s := testbedSettings(t)
	s.TokenID, s.TokenSecret = pveemu.RootTokenID, pveemu.RootTokenSecret
	c, err := s.Connect(testCtx(t))
	require.NoError(t, err)
	require.False(t, c.Identity().IsRootPam())

	vm, err := c.CreateVM(testCtx(t), gpuVM("root-token-raw", GPU{PCIAddress: "0000:02:00.0", AllFunctions: true, PCIE: true, ROMBar: true}))
	deleteAtEnd(t, c, vm.Node, vm.VMID)
	require.ErrorContains(t, err, "only root can set 'hostpci0' config for non-mapped devices")
}

func TestTestbed_wrongTokenSecretIsRefusedWithoutTheSecret(t *testing.T) {
	s := testbedSettings(t)
	s.TokenID, s.TokenSecret = pveemu.TokenID, "00000000-0000-0000-0000-000000000bad"
	c, err := s.Connect(testCtx(t))
	require.NoError(t, err, "a token is not checked until the first call")
	_, err = c.NextVMID(testCtx(t))
	var rejected *CredentialsError
	require.ErrorAs(t, err, &rejected)
	require.ErrorContains(t, err, "401 Authentication failed!")
	require.ErrorContains(t, err, "that the API token's secret is the secret shown when it was made", "without names from the caller, the setting is described")
	require.NotContains(t, err.Error(), s.TokenSecret)

	s.Credentials = Credentials{TokenID: "proxmox.api_token_id in the provider block", TokenSecret: "proxmox.api_token_secret in the provider block"}
	c, err = s.Connect(testCtx(t))
	require.NoError(t, err)
	_, err = c.NextVMID(testCtx(t))
	require.ErrorContains(t, err, "rejected the API token terraform@pve!gpu (from proxmox.api_token_id in the provider block) (401 Authentication failed!)")
	require.ErrorContains(t, err, "that proxmox.api_token_secret in the provider block is the secret shown")
	require.NotContains(t, err.Error(), s.TokenSecret)
}

func TestTestbed_gpuChangeNeedsRestart(t *testing.T) {
	c, ctx := tokenClient(t), testCtx(t)
	spec, _ := createdVM(t, c, gpuVM("gpu-change", GPU{Mapping: "a6000-0", PCIE: true, ROMBar: true, AllFunctions: true}))

	// A tag changes in place, the VM keeps running and is not stopped.
	emu.ResetCallCounts()
	tagged := spec
	tagged.Tags = []string{"gpu", "ml"}
	vm, err := c.UpdateVM(ctx, spec, tagged, false)
	require.NoError(t, err)
	require.Equal(t, []string{"gpu", "ml"}, vm.Tags)
	require.Equal(t, "running", vm.Status)
	require.Zero(t, emu.CallCounts()["POST /nodes/{node}/qemu/{vmid}/status/stop"])

	// Another GPU while running, without allow_restart: refused, unchanged.
	moved := tagged
	moved.GPUs = []GPU{{Mapping: "a6000-1", PCIE: true, ROMBar: true, AllFunctions: true}}
	_, err = c.UpdateVM(ctx, tagged, moved, false)
	var restart *RestartNeededError
	require.ErrorAs(t, err, &restart)
	require.Equal(t, []string{"hostpci0"}, restart.Changes)
	require.ErrorContains(t, err, "changes hostpci0 only while it is stopped")
	config, _ := emu.VMConfig("pve-a6000", vm.VMID)
	require.Equal(t, "mapping=a6000-0,pcie=1,rombar=1", config["hostpci0"])
	require.Equal(t, "running", emu.VMStatus("pve-a6000", vm.VMID))

	// With allow_restart: stopped, changed, started.
	vm, err = c.UpdateVM(ctx, tagged, moved, true)
	require.NoError(t, err)
	require.Equal(t, "running", vm.Status)
	require.Equal(t, map[int]string{0: "mapping=a6000-1,pcie=1,rombar=1"}, vm.HostPCI)

	// A GPU removed while stopped needs no restart: hostpci0 is deleted.
	stopped := moved
	stopped.Started = false
	_, err = c.UpdateVM(ctx, moved, stopped, false)
	require.NoError(t, err)
	none := stopped
	none.GPUs = nil
	vm, err = c.UpdateVM(ctx, stopped, none, false)
	require.NoError(t, err)
	require.Equal(t, "stopped", vm.Status)
	require.Empty(t, vm.HostPCI)
}

func TestTestbed_gpuChangeOnAVMTheUpdateStopsNeedsNoRestart(t *testing.T) {
	c, ctx := tokenClient(t), testCtx(t)
	spec, vm := createdVM(t, c, gpuVM("gpu-change-stopping", GPU{Mapping: "a6000-0", PCIE: true, ROMBar: true, AllFunctions: true}))
	require.Equal(t, "running", emu.VMStatus("pve-a6000", vm.VMID))

	// Another GPU and stopped in the same update, without allow_restart:
	// the VM is stopped (as asked), then changed, and stays stopped.
	emu.ResetCallCounts()
	planned := spec
	planned.Started = false
	planned.GPUs = []GPU{{Mapping: "a6000-1", PCIE: true, ROMBar: true, AllFunctions: true}}
	vm, err := c.UpdateVM(ctx, spec, planned, false)
	require.NoError(t, err)
	require.Equal(t, "stopped", vm.Status)
	require.Equal(t, map[int]string{0: "mapping=a6000-1,pcie=1,rombar=1"}, vm.HostPCI)
	config, _ := emu.VMConfig("pve-a6000", vm.VMID)
	require.Equal(t, "mapping=a6000-1,pcie=1,rombar=1", config["hostpci0"], "applied, not left pending")
	counts := emu.CallCounts()
	require.Equal(t, 1, counts["POST /nodes/{node}/qemu/{vmid}/status/stop"], "%v", counts)
	require.Zero(t, counts["POST /nodes/{node}/qemu/{vmid}/status/start"], "%v", counts)
}

func TestTestbed_failedTaskSurfacesExitStatusAndLog(t *testing.T) {
	c, ctx := tokenClient(t), testCtx(t)
	emu.FailNextTask("qmstart", "start failed: QEMU exited with code 1", "kvm: -device vfio-pci: failed to setup container", "TASK ERROR: start failed: QEMU exited with code 1")
	vm, err := c.CreateVM(ctx, gpuVM("failing-start", GPU{Mapping: "a6000-0", PCIE: true, ROMBar: true, AllFunctions: true}))
	deleteAtEnd(t, c, vm.Node, vm.VMID)

	var taskErr *TaskError
	require.ErrorAs(t, err, &taskErr)
	require.Equal(t, "qmstart", taskErr.Type)
	require.Equal(t, "start failed: QEMU exited with code 1", taskErr.ExitStatus)
	require.Contains(t, taskErr.Log, "kvm: -device vfio-pci: failed to setup container")
	require.NotZero(t, vm.VMID, "the VM exists and is returned with the error")
	require.Equal(t, "stopped", emu.VMStatus("pve-a6000", vm.VMID))
}

func TestTestbed_deleteStopsDestroysAndToleratesGone(t *testing.T) {
	c, ctx := rootClient(t), testCtx(t)
	vm, err := c.CreateVM(ctx, gpuVM("to-delete", GPU{Mapping: "a6000-0", PCIE: true, ROMBar: true, AllFunctions: true}))
	deleteAtEnd(t, c, vm.Node, vm.VMID)
	require.NoError(t, err)

	require.NoError(t, c.DeleteVM(ctx, "pve-a6000", vm.VMID))
	require.Empty(t, emu.VMStatus("pve-a6000", vm.VMID))
	_, found, err := c.ReadVM(ctx, "pve-a6000", vm.VMID)
	require.NoError(t, err)
	require.False(t, found)

	require.NoError(t, c.DeleteVM(ctx, "pve-a6000", vm.VMID), "deleting a VM that is gone is success")
}

func TestTestbed_outOfBandChangesShowOnRead(t *testing.T) {
	c, ctx := tokenClient(t), testCtx(t)
	vm, err := c.CreateVM(ctx, gpuVM("drift", GPU{Mapping: "a6000-0", PCIE: true, ROMBar: true, AllFunctions: true}))
	deleteAtEnd(t, c, vm.Node, vm.VMID)
	require.NoError(t, err)

	require.NoError(t, emu.StopVMOutOfBand("pve-a6000", vm.VMID))
	require.NoError(t, emu.SetVMConfigOutOfBand("pve-a6000", vm.VMID, "hostpci0", ""))
	back, found, err := c.ReadVM(ctx, "pve-a6000", vm.VMID)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "stopped", back.Status)
	require.False(t, back.Started)
	require.Empty(t, back.GPUs)

	require.NoError(t, emu.DeleteVMOutOfBand("pve-a6000", vm.VMID))
	_, found, err = c.ReadVM(ctx, "pve-a6000", vm.VMID)
	require.NoError(t, err)
	require.False(t, found)
}

// TestTestbed_taskPollingIsBounded: each task is polled on the backoff
// schedule, so a create + configure + start makes no more status polls
// than the schedule fits into the time it took, and reads no task log when
// every task succeeds.
func TestTestbed_taskPollingIsBounded(t *testing.T) {
	c, ctx := tokenClient(t), testCtx(t)
	emu.ResetCallCounts()
	started := time.Now()
	vm, err := c.CreateVM(ctx, gpuVM("polling", GPU{Mapping: "a6000-0", PCIE: true, ROMBar: true, AllFunctions: true}))
	elapsed := time.Since(started)
	deleteAtEnd(t, c, vm.Node, vm.VMID)
	require.NoError(t, err)

	const tasks = 3 // qmclone, qmconfig, qmstart
	counts := emu.CallCounts()
	polls := counts["GET /nodes/{node}/tasks/{upid}/status"]
	require.GreaterOrEqual(t, polls, tasks, "every task followed to its end")
	require.LessOrEqual(t, polls, tasks*pollsWithin(elapsed), "no more polls than the backoff schedule allows in %s", elapsed)
	require.Zero(t, counts["GET /nodes/{node}/tasks/{upid}/log"], "no task log read for tasks that succeeded")
}

// pollsWithin is how many polls the backoff schedule makes in d.
func pollsWithin(d time.Duration) int {
	var n int
	wait := taskSchedule.First
	total := wait
	for {
		wait = taskSchedule.Next(wait)
		total += wait
		n++
		if total > d {
			return n
		}
	}
}
