package provider

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
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
				"which lacks Mapping.Modify on /mapping/pci", "pveum acl modify /mapping/pci --users terraform@pve --tokens '"+pveemu.UseOnlyTokenID+"' --roles PVEMappingAdmin"),
		}},
	})
	require.Nil(t, mappingLines(t, "acc-use-only"))
}

// PVE makes the mapping and its answer is lost: the create fails, and the
// mapping is in the state (tainted), so nothing is left outside it; the
// next apply replaces it, and the destroy deletes it.
func TestAccPCIMapping_aCreateWhoseAnswerWasLostIsKeptInTheState(t *testing.T) {
	testAccPreCheck(t)
	const id = "acc-answer-lost"
	endpoint, certPEM := pve.AnswerDroppingProxy(t, func(r *http.Request) bool {
		return r.Method == http.MethodPost && r.URL.Path == "/api2/json/cluster/mapping/pci"
	})
	config := fmt.Sprintf(`
provider "gpu" {
  proxmox {
    endpoint         = %q
    api_token_id     = %q
    api_token_secret = %q
    ca_certificate   = %q
  }
}

resource "gpu_pci_mapping" "lost" {
  name = %q
  select {
    product = "L40S"
    nodes   = [%q]
  }
}
`, endpoint, pveemu.TokenID, pveemu.TokenSecret, certPEM, id, pveemu.NodeL40SB)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			require.Nil(t, mappingLines(t, id), "the destroy deleted the mapping")
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config:      config,
				ExpectError: errorText("creating Proxmox VE PCI mapping", "Proxmox VE made the mapping nonetheless", "kept in the state, tainted"),
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("gpu_pci_mapping.lost", plancheck.ResourceActionDestroyBeforeCreate),
				}},
				PreConfig: func() { require.Len(t, mappingLines(t, id), 2, "the failed create left the mapping, in the state") },
			},
		},
	})
}
