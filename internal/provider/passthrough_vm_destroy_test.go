package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// These tests hold the rule that create-time checks never block a destroy
// or the replacement of a resource's own VM. `terraform destroy` first
// plans the whole configuration as usual (Terraform's pre-destroy
// refresh), so a resource whose create the apply refused is planned as a
// create again: a step with Destroy set runs that same `plan -destroy`
// with refresh, which the harness's own final destroy (-refresh=false)
// would not.

// refusedDuplicateThenDestroyed is a test case whose first step applies
// config and expects the apply to refuse one of its VMs with want, and
// whose second step destroys everything with config still in place; vmids
// are the VMs the configuration asks for: one runs between the steps, and
// none is left afterwards.
func refusedDuplicateThenDestroyed(t *testing.T, config string, vmids []int, want ...string) resource.TestCase {
	return resource.TestCase{
		ProtoV6ProviderFactories: pveProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      config,
				ExpectError: errorText(want...),
			},
			{
				PreConfig: func() {
					running := 0
					for _, id := range vmids {
						if pve.VMStatus(pveemu.NodeA6000, id) == "running" {
							running++
						}
					}
					require.Equal(t, 1, running, "one VM won")
				},
				Config:  config,
				Destroy: true,
			},
		},
		CheckDestroy: func(*terraform.State) error {
			for _, id := range vmids {
				if status := pve.VMStatus(pveemu.NodeA6000, id); status != "" {
					return fmt.Errorf("VM %d is still there (%s)", id, status)
				}
			}
			return nil
		},
	}
}

// twoVMs is the configuration of VM "first" and VM "second", created after
// it, each on the A6000 node with its body.
func twoVMs(first, second string) string {
	return pveProviders() + pveVM("first", "", pveemu.NodeA6000, first) +
		pveVM("second", "", pveemu.NodeA6000, "  depends_on = [gpu_passthrough_vm.first]\n"+second)
}

// Created side by side, both VMs pass the create's preflight and one fails
// to start (PVE: "PCI device ... already in use by VMID ..."), kept
// tainted; or the later one's preflight refuses it. Either way the destroy
// plans the loser's replacement, and goes ahead.
func TestAccPassthroughVM_destroyAfterTwoVMsRacedForOneGPU(t *testing.T) {
	testAccPreCheck(t)
	gpu := "  gpu {\n    mapping = \"a6000-0\"\n  }\n"
	config := pveProviders() + pveVM("left", "", pveemu.NodeA6000, "  vmid = 4131\n"+gpu) +
		pveVM("right", "", pveemu.NodeA6000, "  vmid = 4132\n"+gpu)
	resource.Test(t, refusedDuplicateThenDestroyed(t, config, []int{4131, 4132}, "already in use by VMID"))
}

func TestAccPassthroughVM_destroyAfterARefusedDuplicateGPU(t *testing.T) {
	testAccPreCheck(t)
	config := twoVMs("  vmid = 4101\n  gpu {\n    mapping = \"a6000-0\"\n  }\n", "  vmid = 4102\n  gpu {\n    mapping = \"a6000-0\"\n  }\n")
	resource.Test(t, refusedDuplicateThenDestroyed(t, config, []int{4101, 4102},
		"GPU in use by another VM", `gpu[0].mapping "a6000-0": 0000:01:00 is passed through to VM 4101 (first)`))
}

func TestAccPassthroughVM_destroyAfterARefusedDuplicateVMID(t *testing.T) {
	testAccPreCheck(t)
	config := twoVMs("  vmid = 4111\n  gpu {\n    mapping = \"a6000-0\"\n  }\n", "  vmid = 4111\n  gpu {\n    mapping = \"a6000-1\"\n  }\n")
	resource.Test(t, refusedDuplicateThenDestroyed(t, config, []int{4111}, "VM ID in use", `vmid 4111 is VM "first" on node pve-a6000 already`))
}

// A VM kept tainted after its start failed is its own: the plan that
// replaces it does not refuse the vmid the VM has.
func TestAccPassthroughVM_taintedVMWithItsOwnVMIDIsReplaced(t *testing.T) {
	testAccPreCheck(t)
	const address, vmid = "gpu_passthrough_vm.own", 4121
	config := pveProviders() + pveVM("own", "", pveemu.NodeA6000, "  vmid = 4121\n  gpu {\n    mapping = \"a6000-1\"\n  }\n")
	failStart := func() { pve.FailNextTask("qmstart", "start failed: QEMU exited with code 1") }
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pveProviderFactories,
		Steps: []resource.TestStep{
			{PreConfig: failStart, Config: config, ExpectError: errorText("Proxmox task qmstart", "kept in the state, tainted")},
			{
				PreConfig: func() {
					require.Equal(t, "stopped", pve.VMStatus(pveemu.NodeA6000, vmid), "the failed VM exists, stopped")
					pve.ResetCallCounts()
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(address, plancheck.ResourceActionReplace),
				}},
				Check: func(s *terraform.State) error {
					require.Equal(t, vmid, vmidOf(t, s, address))
					require.Equal(t, "running", pve.VMStatus(pveemu.NodeA6000, vmid))
					require.Equal(t, 1, pve.CallCounts()["DELETE /nodes/{node}/qemu/{vmid}"], "the tainted VM was destroyed")
					return nil
				},
			},
		},
	})
}
