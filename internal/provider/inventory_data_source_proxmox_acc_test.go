package provider

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// pciDevices are gpu_inventory.pci_devices of address in s, as flat attribute maps.
func pciDevices(t *testing.T, s *terraform.State, address string) []map[string]string {
	t.Helper()
	attrs := s.RootModule().Resources[address].Primary.Attributes
	n, err := strconv.Atoi(attrs["pci_devices.#"])
	require.NoError(t, err)
	out := make([]map[string]string, n)
	for i := range n {
		prefix := "pci_devices." + strconv.Itoa(i) + "."
		out[i] = map[string]string{}
		for k, v := range attrs {
			if rest, ok := strings.CutPrefix(k, prefix); ok {
				out[i][rest] = v
			}
		}
	}
	return out
}

func TestAccInventoryDataSource_proxmoxListsNVIDIAFunctionsWithMappingsHoldersAndVGPUs(t *testing.T) {
	testAccPreCheck(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pveProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: pveProviders() + pveVM("holder", "", pveemu.NodeA6000, `
  gpu {
    mapping = "a6000-1"
  }
`) + `
data "gpu_inventory" "all" {
  source     = "proxmox"
  depends_on = [gpu_passthrough_vm.holder]
}

data "gpu_inventory" "free_a6000" {
  source     = "proxmox"
  depends_on = [gpu_passthrough_vm.holder]
  filter {
    nodes     = ["pve-a6000"]
    product   = "A6000"
    free_only = true
  }
}
`,
				Check: func(s *terraform.State) error {
					byKey := map[string]map[string]string{}
					for _, d := range pciDevices(t, s, "data.gpu_inventory.all") {
						require.Equal(t, "0x10de", d["vendor_id"], "NVIDIA functions only")
						require.NotEqual(t, pveemu.NodeCPU, d["node"], "the CPU node has none")
						byKey[d["node"]+" "+d["pci_address"]] = d
					}
					gpu := byKey["pve-a6000 0000:01:00.0"]
					require.Equal(t, "true", gpu["gpu"])
					require.Equal(t, "a6000-0", gpu["mapping"])
					require.Equal(t, "0000:01:00", gpu["device"])
					require.Equal(t, "14", gpu["iommu_group"])
					require.Equal(t, "true", gpu["free"])
					require.Equal(t, "false", byKey["pve-a6000 0000:01:00.1"]["gpu"], "the audio function is listed, not as a GPU")
					held := byKey["pve-a6000 0000:02:00.0"]
					require.Equal(t, "false", held["free"])
					require.Equal(t, "true", held["vm_running"])
					require.Equal(t, "holder", held["vm_name"])
					require.True(t, strings.HasPrefix(byKey["pve-h100 0000:41:00.0"]["class"], "0x0302"), "the H100 is a 3D controller")
					l40s := byKey["pve-l40s 0000:c1:00.0"]
					require.Equal(t, "l40s-vgpu", l40s["mapping"])
					require.NotEqual(t, "0", l40s["mdev_types.#"], "the L40S offers vGPU types")
					require.Equal(t, "nvidia-1155", l40s["mdev_types.0.type"])

					free := pciDevices(t, s, "data.gpu_inventory.free_a6000")
					require.Len(t, free, 1, "only the first A6000's GPU function: the second is held, audio functions do not match the product")
					require.Equal(t, "0000:01:00.0", free[0]["pci_address"])
					return nil
				},
			},
		},
	})
}
