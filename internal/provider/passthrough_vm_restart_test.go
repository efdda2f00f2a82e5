package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// startedBeforeApply is a plan check that starts the VM between the plan
// and its apply, as someone on the node would.
type startedBeforeApply struct {
	node string
	vmid *int
}

func (c startedBeforeApply) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	resp.Error = pve.StartVMOutOfBand(c.node, *c.vmid)
}

// A change that needs the VM stopped, planned while the VM was stopped, is
// refused by the apply when the VM runs by then: on allow_restart, with
// the fix. With started = false the same change stops the VM first and
// needs no allow_restart.
func TestAccPassthroughVM_restartFoundAtApplyIsRefusedOnAllowRestart(t *testing.T) {
	testAccPreCheck(t)
	const address = "gpu_passthrough_vm.restart"
	vm := func(started bool, mapping string) string {
		return pveProviders() + pveVM("restart", "", pveemu.NodeA6000, fmt.Sprintf(`
  started       = %t
  allow_restart = false
  gpu {
    mapping = %q
  }
`, started, mapping))
	}
	var vmid int
	hostpci0 := func() string {
		config, ok := pve.VMConfig(pveemu.NodeA6000, vmid)
		require.True(t, ok, "VM %d exists", vmid)
		return config["hostpci0"]
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pveProviderFactories,
		Steps: []resource.TestStep{
			// Create and Read: a stopped VM.
			{
				Config: vm(false, "a6000-0"),
				Check: func(s *terraform.State) error {
					vmid = vmidOf(t, s, address)
					require.Equal(t, "stopped", pve.VMStatus(pveemu.NodeA6000, vmid))
					return nil
				},
			},
			// Another GPU and started: no restart as planned, but the VM
			// is started before the apply, which refuses and changes nothing.
			{
				Config: vm(true, "a6000-1"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(address, plancheck.ResourceActionUpdate),
					startedBeforeApply{node: pveemu.NodeA6000, vmid: &vmid},
				}},
				ExpectError: errorText("updating Proxmox VM", "allow_restart = false",
					"is running, and Proxmox VE changes hostpci0 only while it is stopped: nothing was changed",
					"Set allow_restart = true (the VM is stopped and started to apply hostpci0), or started = false"),
			},
			// The fix it names: started = false stops the running VM, then
			// changes it, without allow_restart.
			{
				PreConfig: func() {
					require.Equal(t, "mapping=a6000-0,pcie=1,rombar=1", hostpci0(), "the refused apply changed nothing")
					require.Equal(t, "running", pve.VMStatus(pveemu.NodeA6000, vmid))
				},
				Config: vm(false, "a6000-1"),
				Check: func(*terraform.State) error {
					require.Equal(t, "mapping=a6000-1,pcie=1,rombar=1", hostpci0())
					require.Equal(t, "stopped", pve.VMStatus(pveemu.NodeA6000, vmid))
					return nil
				},
			},
		},
	})
}
