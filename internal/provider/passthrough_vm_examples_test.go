package provider

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// The Proxmox examples on the testbed's emulator: applied as written, each
// VM running with its GPUs, and destroyed.

func readExample(t *testing.T, parts ...string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(append([]string{"..", ".."}, parts...)...))
	require.NoError(t, err)
	return string(raw)
}

// The resource example passes a raw address, so it runs as root@pam (the
// environment's password, no token).
func TestAccPassthroughVM_resourceExampleAppliesAsRootPam(t *testing.T) {
	testAccPreCheck(t)
	t.Setenv("PM_API_TOKEN_ID", "")
	t.Setenv("PM_API_TOKEN_SECRET", "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `provider "gpu" {}` + "\n" + readExample(t, "examples", "resources", "gpu_passthrough_vm", "resource.tf"),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("gpu_passthrough_vm.train", tfjsonpath.New("status"), knownvalue.StringExact("running")),
				statecheck.ExpectKnownValue("gpu_passthrough_vm.inference", tfjsonpath.New("status"), knownvalue.StringExact("running")),
			},
		}},
	})
}

func TestAccInventoryDataSource_proxmoxExampleAppliesAVMOnAFreeGPU(t *testing.T) {
	testAccPreCheck(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `provider "gpu" {}` + "\n" + readExample(t, "examples", "data-sources", "gpu_inventory", "proxmox.tf"),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("gpu_passthrough_vm.on_a_free_gpu", tfjsonpath.New("status"), knownvalue.StringExact("running")),
				statecheck.ExpectKnownValue("gpu_passthrough_vm.on_a_free_gpu", tfjsonpath.New("node"), knownvalue.StringExact("pve-a6000")),
			},
		}},
	})
}

// examples/proxmox is applied as written, with the token from the
// environment: the GPU by mapping, running, read back.
func TestAccPassthroughVM_proxmoxExampleApplies(t *testing.T) {
	testAccPreCheck(t)
	main := readExample(t, "examples", "proxmox", "main.tf")
	require.True(t, strings.Contains(main, `source = "gpuinfra/gpu"`))
	example := strings.Replace(main, `source = "gpuinfra/gpu"`, `source = "`+providerAddress+`"`, 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: example,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("gpu_passthrough_vm.gpu", tfjsonpath.New("status"), knownvalue.StringExact("running")),
				statecheck.ExpectKnownValue("gpu_passthrough_vm.gpu", tfjsonpath.New("gpus").AtSliceIndex(0).AtMapKey("value"),
					knownvalue.StringExact("mapping=a6000-0,pcie=1,rombar=1")),
				statecheck.ExpectKnownValue("gpu_passthrough_vm.gpu", tfjsonpath.New("gpus").AtSliceIndex(0).AtMapKey("product"),
					knownvalue.StringRegexp(regexp.MustCompile(`A6000`))),
				statecheck.ExpectKnownValue("gpu_passthrough_vm.gpu", tfjsonpath.New("node"), knownvalue.StringExact(pveemu.NodeA6000)),
				// Two A6000s, the H100, pve-l40s's L40S and pve-l40s-b's two;
				// the VM's A6000 held by it.
				statecheck.ExpectKnownOutputValue("cluster_gpus", knownvalue.ListSizeExact(6)),
				statecheck.ExpectKnownOutputValue("cluster_gpus", knownvalue.ListPartial(map[int]knownvalue.Check{
					0: knownvalue.StringRegexp(regexp.MustCompile(`^pve-a6000 0000:01:00.0 .*A6000.* \(IOMMU group 14\) mapping=a6000-0 vgpu_types=0 in VM [0-9]+$`)),
				})),
			},
		}},
	})
}
