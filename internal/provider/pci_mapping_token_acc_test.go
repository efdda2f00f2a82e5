package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// An API token, never root: a privilege-separated token with exactly the
// documented role (Mapping.Modify on /mapping/pci included) makes a
// mapping, and a VM of the same token passes a GPU through it; a token
// with Mapping.Use only is refused at plan with the privilege, the path
// and the pveum fix.

func TestAccPCIMapping_aTokenMakesAMappingAndAVMPassesAGPUThroughIt(t *testing.T) {
	testAccPreCheck(t)
	t.Setenv("PM_API_TOKEN_ID", pveemu.RoleTokenID)
	t.Setenv("PM_API_TOKEN_SECRET", pveemu.RoleTokenSecret)
	const id = "acc-token-pool"
	config := `
provider "gpu" {}

resource "gpu_pci_mapping" "pool" {
  name = "` + id + `"
  mdev = true
  select {
    product = "L40S"
    nodes   = ["` + pveemu.NodeL40SB + `"]
  }
}
` + pveVM("worker", "", pveemu.NodeL40SB, `
  gpu {
    mapping = gpu_pci_mapping.pool.id
  }
`)
	vmGPU := tfjsonpath.New("gpus").AtSliceIndex(0)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gpu_passthrough_vm.worker", tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue("gpu_passthrough_vm.worker", vmGPU.AtMapKey("value"), knownvalue.StringRegexp(regexp.MustCompile(`^mapping=`+id+`,`))),
				},
				Check: func(s *terraform.State) error {
					vmid := vmidOf(t, s, "gpu_passthrough_vm.worker")
					config, ok := pve.VMConfig(pveemu.NodeL40SB, vmid)
					require.True(t, ok)
					require.Equal(t, "mapping="+id+",pcie=1,rombar=1", config["hostpci0"])
					require.Equal(t, "running", pve.VMStatus(pveemu.NodeL40SB, vmid))
					require.Len(t, mappingLines(t, id), 2)
					return nil
				},
			},
			// Refreshed, the mapping says which VM holds which card: the
			// VM got the pool's first card.
			{
				RefreshState: true,
				Check: func(s *terraform.State) error {
					vmid := vmidOf(t, s, "gpu_passthrough_vm.worker")
					attrs := s.RootModule().Resources["gpu_pci_mapping.pool"].Primary.Attributes
					require.Equal(t, "0000:41:00", attrs["entries.0.path"])
					require.Equal(t, fmt.Sprint(vmid), attrs["entries.0.vm"], "the VM holds the first card")
					require.Empty(t, attrs["entries.1.vm"], "the second is free")
					vm := s.RootModule().Resources["gpu_passthrough_vm.worker"].Primary.Attributes
					require.Equal(t, "0000:41:00.0", vm["gpus.0.pci_address"], "the VM's gpus name the card it got")
					require.Contains(t, vm["gpus.0.product"], "L40S")
					return nil
				},
			},
		},
	})
}

func TestAccPCIMapping_aTokenWithoutMappingModifyIsRefusedAtPlan(t *testing.T) {
	testAccPreCheck(t)
	config := fmt.Sprintf(`
provider "gpu" {
  proxmox {
    api_token_id     = %q
    api_token_secret = %q
  }
}

resource "gpu_pci_mapping" "refused" {
  name = "acc-use-only"
  mdev = true
  select {
    product = "L40S"
    nodes   = [%q]
  }
}
`, pveemu.UseOnlyTokenID, pveemu.UseOnlyTokenSecret, pveemu.NodeL40SB)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: config, PlanOnly: true,
			ExpectError: errorText("No permission to create the mapping", "The provider authenticates as "+pveemu.UseOnlyTokenID,
				"which lacks Mapping.Modify on /mapping/pci", "pveum acl modify /mapping/pci --tokens '"+pveemu.UseOnlyTokenID+"' --roles PVEMappingAdmin"),
		}},
	})
	require.Nil(t, mappingLines(t, "acc-use-only"))
}
