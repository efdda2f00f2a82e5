package provider

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// gpu_pci_mapping on the testbed's emulator, with the privilege-separated
// API token of the environment (Mapping.Modify on /mapping/pci, no root).
// The L40S cards: pve-l40s's 0000:c1:00 (IOMMU group 40, also in the vGPU
// mapping l40s-vgpu) and pve-l40s-b's 0000:41:00 and 0000:61:00 (groups 50
// and 51, in no mapping).

// l40sEntry is an L40S's entry as PVE stores it.
func l40sEntry(node, path string, group int) string {
	return fmt.Sprintf("node=%s,path=%s,id=10de:26b9,subsystem-id=10de:1851,iommugroup=%d", node, path, group)
}

// entryCheck checks entries[i] of address: node, path, IOMMU group.
func entryCheck(address string, i int, node, path string, group int64) []statecheck.StateCheck {
	at := tfjsonpath.New("entries").AtSliceIndex(i)
	return []statecheck.StateCheck{
		statecheck.ExpectKnownValue(address, at.AtMapKey("node"), knownvalue.StringExact(node)),
		statecheck.ExpectKnownValue(address, at.AtMapKey("path"), knownvalue.StringExact(path)),
		statecheck.ExpectKnownValue(address, at.AtMapKey("iommu_group"), knownvalue.Int64Exact(group)),
		statecheck.ExpectKnownValue(address, at.AtMapKey("id"), knownvalue.StringExact("10de:26b9")),
		statecheck.ExpectKnownValue(address, at.AtMapKey("subsystem_id"), knownvalue.StringExact("10de:1851")),
		statecheck.ExpectKnownValue(address, at.AtMapKey("product"), knownvalue.StringRegexp(regexp.MustCompile(`L40S`))),
	}
}

// mappingLines are the map lines PVE holds for mapping id (nil: none).
func mappingLines(t *testing.T, id string) []string {
	t.Helper()
	lines, ok := pve.Mapping(id)
	if !ok {
		return nil
	}
	return lines
}

func TestAccPCIMapping_everyL40SFromInventoryAcrossTwoNodesImportAndEmptyPlan(t *testing.T) {
	testAccPreCheck(t)
	const address, id = "gpu_pci_mapping.l40s", "acc-l40s-all"
	config := `
provider "gpu" {}

data "gpu_inventory" "l40s" {
  source = "proxmox"
  filter {
    product = "L40S"
  }
}

resource "gpu_pci_mapping" "l40s" {
  name        = "` + id + `"
  description = "every L40S"
  dynamic "device" {
    for_each = [for d in data.gpu_inventory.l40s.pci_devices : d if d.gpu]
    content {
      node    = device.value.node
      address = device.value.device
    }
  }
}
`
	g41, g61 := groupOf(t, pveemu.NodeL40SB, "0000:41:00.0"), groupOf(t, pveemu.NodeL40SB, "0000:61:00.0")
	checks := append(append(entryCheck(address, 0, pveemu.NodeL40S, "0000:c1:00", 40),
		entryCheck(address, 1, pveemu.NodeL40SB, "0000:41:00", int64(g41))...), entryCheck(address, 2, pveemu.NodeL40SB, "0000:61:00", int64(g61))...)
	checks = append(checks,
		statecheck.ExpectKnownValue(address, tfjsonpath.New("entries"), knownvalue.ListSizeExact(3)),
		statecheck.ExpectKnownValue(address, tfjsonpath.New("entries").AtSliceIndex(1).AtMapKey("vm"), knownvalue.Null()),
		statecheck.ExpectKnownValue(address, tfjsonpath.New("id"), knownvalue.StringExact(id)),
		statecheck.ExpectKnownValue(address, tfjsonpath.New("mdev"), knownvalue.Bool(true)))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			require.Nil(t, mappingLines(t, id), "the mapping is deleted")
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config:            config,
				ConfigStateChecks: checks,
				Check: func(*terraform.State) error {
					require.Equal(t, []string{
						l40sEntry(pveemu.NodeL40S, "0000:c1:00", 40),
						l40sEntry(pveemu.NodeL40SB, "0000:41:00", g41),
						l40sEntry(pveemu.NodeL40SB, "0000:61:00", g61),
					}, mappingLines(t, id))
					return nil
				},
			},
			// Imported by its ID, as device blocks: the same state.
			{
				ResourceName: address, ImportState: true, ImportStateId: id, ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
			{
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			// Deleted outside Terraform: removed from the state, created again.
			{
				PreConfig: func() { deleteMappingAsRoot(t, id) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(address, plancheck.ResourceActionCreate),
				}},
				Check: func(*terraform.State) error {
					require.Len(t, mappingLines(t, id), 3)
					return nil
				},
			},
		},
	})
	// The plan (with Terraform's own CLI, which shows warnings) warns of the card pve-l40s shares with the vGPU mapping.
	overlap := warnings(terraformPlan(t, config), "Device in another mapping")
	require.Len(t, overlap, 1)
	require.Contains(t, overlap[0].Detail, `0000:c1:00 on node pve-l40s is in mapping "l40s-vgpu" too`)
	require.Contains(t, overlap[0].Detail, "a vGPU (mdev) mapping")
}

// rootClient is a backend client of the emulator as root@pam.
func rootClient(t *testing.T) *proxmox.Client {
	t.Helper()
	ca, err := os.ReadFile(pve.CAFile())
	require.NoError(t, err)
	client, err := proxmox.Settings{Endpoint: pve.URL(), Username: pveemu.RootUser, Password: pveemu.RootPassword,
		CACertificatePEM: string(ca)}.Connect(context.Background())
	require.NoError(t, err)
	return client
}

// deleteMappingAsRoot deletes mapping id as root@pam, outside Terraform.
func deleteMappingAsRoot(t *testing.T, id string) {
	t.Helper()
	require.NoError(t, rootClient(t).DeletePCIMapping(context.Background(), id))
	require.Nil(t, mappingLines(t, id))
}

// groupOf is the IOMMU group the node reports for address now (a card
// moved away and back, in an earlier test, has a new one).
func groupOf(t *testing.T, node, address string) int {
	t.Helper()
	fns, err := rootClient(t).PCIFunctions(context.Background(), node)
	require.NoError(t, err)
	for _, fn := range fns {
		if fn.Address == address {
			return fn.IOMMUGroup
		}
	}
	require.Failf(t, "no such PCI function", "%s on %s", address, node)
	return -1
}

func TestAccPCIMapping_selectFollowsACardMovedAndDropsACardPulled(t *testing.T) {
	testAccPreCheck(t)
	const address, id = "gpu_pci_mapping.pool", "acc-l40s-b-pool"
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
`
	moved := false
	t.Cleanup(func() {
		if moved {
			require.NoError(t, pve.MovePCIDevice(pveemu.NodeL40SB, "0000:e1:00", "0000:61:00"))
		}
		// back in its IOMMU group of the testbed's start, for the tests after this one
		require.NoError(t, pve.RestorePCIDevice(pveemu.NodeL40SB, "0000:61:00"))
	})
	g41, g61 := groupOf(t, pveemu.NodeL40SB, "0000:41:00.0"), groupOf(t, pveemu.NodeL40SB, "0000:61:00.0")
	steps := []resource.TestStep{
		{
			Config: config,
			ConfigStateChecks: append(entryCheck(address, 0, pveemu.NodeL40SB, "0000:41:00", int64(g41)),
				entryCheck(address, 1, pveemu.NodeL40SB, "0000:61:00", int64(g61))...),
		},
		// The second card moved to another slot (a new IOMMU group): the
		// plan shows its new path, and the apply writes it.
		{
			PreConfig: func() {
				require.NoError(t, pve.MovePCIDevice(pveemu.NodeL40SB, "0000:61:00", "0000:e1:00"))
				moved = true
			},
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(address, plancheck.ResourceActionUpdate),
				plancheck.ExpectKnownValue(address, tfjsonpath.New("entries").AtSliceIndex(1).AtMapKey("path"), knownvalue.StringExact("0000:e1:00")),
			}},
			Check: func(*terraform.State) error {
				lines := mappingLines(t, id)
				require.Len(t, lines, 2)
				require.Regexp(t, `^node=pve-l40s-b,path=0000:e1:00,id=10de:26b9,subsystem-id=10de:1851,iommugroup=\d+$`, lines[1])
				return nil
			},
		},
		// Moved back: the same again, and then no change.
		{
			PreConfig: func() {
				require.NoError(t, pve.MovePCIDevice(pveemu.NodeL40SB, "0000:e1:00", "0000:61:00"))
				moved = false
			},
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(address, plancheck.ResourceActionUpdate),
				plancheck.ExpectKnownValue(address, tfjsonpath.New("entries").AtSliceIndex(1).AtMapKey("path"), knownvalue.StringExact("0000:61:00")),
			}},
			Check: func(*terraform.State) error {
				require.Equal(t, l40sEntry(pveemu.NodeL40SB, "0000:61:00", groupOf(t, pveemu.NodeL40SB, "0000:61:00.0")), mappingLines(t, id)[1])
				return nil
			},
		},
		{
			Config:           config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
		},
	}
	// A card pulled drops out of the entries; it is put back when the test
	// ends, for the tests after this one.
	pulled := false
	t.Cleanup(func() {
		if pulled {
			require.NoError(t, pve.RestorePCIDevice(pveemu.NodeL40SB, "0000:61:00"))
		}
	})
	steps = append(steps, resource.TestStep{
		PreConfig: func() {
			require.NoError(t, pve.RemovePCIDevice(pveemu.NodeL40SB, "0000:61:00"))
			pulled = true
		},
		Config: config,
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectResourceAction(address, plancheck.ResourceActionUpdate),
			plancheck.ExpectKnownValue(address, tfjsonpath.New("entries"), knownvalue.ListSizeExact(1)),
		}},
		Check: func(*terraform.State) error {
			require.Equal(t, []string{l40sEntry(pveemu.NodeL40SB, "0000:41:00", g41)}, mappingLines(t, id))
			return nil
		},
	})
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: steps})
}

func TestAccPCIMapping_deviceBlockOfACardMovedWarnsThenRefusesTheApplyAndDestroys(t *testing.T) {
	testAccPreCheck(t)
	const id = "acc-l40s-b-devices"
	config := func(second string) string {
		return `
provider "gpu" {}

resource "gpu_pci_mapping" "pair" {
  name = "` + id + `"
  mdev = true
  device {
    node    = "` + pveemu.NodeL40SB + `"
    address = "0000:41:00"
  }
  device {
    node    = "` + pveemu.NodeL40SB + `"
    address = "` + second + `"
  }
}
`
	}
	moved := false
	t.Cleanup(func() {
		if moved {
			require.NoError(t, pve.MovePCIDevice(pveemu.NodeL40SB, "0000:e1:00", "0000:61:00"))
		}
		// back in its IOMMU group of the testbed's start, for the tests after this one
		require.NoError(t, pve.RestorePCIDevice(pveemu.NodeL40SB, "0000:61:00"))
	})
	g41, g61 := groupOf(t, pveemu.NodeL40SB, "0000:41:00.0"), groupOf(t, pveemu.NodeL40SB, "0000:61:00.0")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config("0000:61:00"),
				Check: func(*terraform.State) error {
					require.Equal(t, []string{l40sEntry(pveemu.NodeL40SB, "0000:41:00", g41), l40sEntry(pveemu.NodeL40SB, "0000:61:00", g61)},
						mappingLines(t, id))
					return nil
				},
			},
			{
				PreConfig: func() {
					require.NoError(t, pve.MovePCIDevice(pveemu.NodeL40SB, "0000:61:00", "0000:e1:00"))
					moved = true
				},
				// Drift alone: the plan warns (so a destroy is not
				// blocked), and its apply checks again and refuses.
				Config: config("0000:61:00"),
				ExpectError: errorText("PCI device gone", "device[1]: node pve-l40s-b has no PCI device at 0000:61:00",
					`The same card (10de:26b9, subsystem 10de:1851) is now at 0000:e1:00: set address = "0000:e1:00"`),
			},
			{
				PreConfig: func() {
					require.Equal(t, []string{l40sEntry(pveemu.NodeL40SB, "0000:41:00", g41), l40sEntry(pveemu.NodeL40SB, "0000:61:00", g61)},
						mappingLines(t, id), "the refused apply wrote nothing")
				},
				Config: config("0000:61:00"), Destroy: true,
			},
			{
				PreConfig: func() { require.Nil(t, mappingLines(t, id), "the destroy deleted it") },
				Config:    config("0000:e1:00"),
				Check: func(*terraform.State) error {
					require.Regexp(t, `^node=pve-l40s-b,path=0000:e1:00,`, mappingLines(t, id)[1])
					return nil
				},
			},
			// Back in its slot, and in the configuration, so the destroy's
			// plan has nothing to refuse.
			{
				PreConfig: func() {
					require.NoError(t, pve.MovePCIDevice(pveemu.NodeL40SB, "0000:e1:00", "0000:61:00"))
					moved = false
				},
				Config: config("0000:61:00"),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue("gpu_pci_mapping.pair",
					tfjsonpath.New("entries").AtSliceIndex(1).AtMapKey("path"), knownvalue.StringExact("0000:61:00"))},
			},
		},
	})
}

func TestAccPCIMapping_planErrors(t *testing.T) {
	testAccPreCheck(t)
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"both styles", `
  select {
    product = "L40S"
  }
  device {
    node    = "pve-l40s-b"
    address = "0000:41:00"
  }
`, []string{"Both select and device", "not both"}},
		{"nothing matches", `
  select {
    product = "B200"
    nodes   = ["pve-a6000", "pve-cpu"]
  }
`, []string{"No GPU matches", `select.product "B200" matches no NVIDIA GPU`, "pve-a6000: 0000:01:00.0 GA102GL [RTX A6000]", "pve-cpu: none"}},
		{"vGPU and passthrough-only cards in one mapping", `
  select {
    product = "/A6000|L40S/"
  }
`, []string{"vGPU and passthrough-only devices in one mapping", "Map them in two mappings"}},
		{"a passthrough overlap", `
  device {
    node    = "pve-a6000"
    address = "0000:01:00"
  }
`, []string{"Device in another mapping", `0000:01:00 on node pve-a6000 is in mapping "a6000-0" already`}},
		{"a group split", `
  device {
    node    = "pve-h100"
    address = "0000:41:00"
  }
`, []string{"IOMMU group not mapped whole", "which also holds 0000:42:00.0 (Mellanox Technologies MT2910 Family [ConnectX-7]"}},
		{"the mdev flag off on an L40S", `
  mdev = false
  device {
    node    = "pve-l40s-b"
    address = "0000:41:00"
  }
`, []string{"Mapping must be marked mdev", "Set mdev = true"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      "provider \"gpu\" {}\n\nresource \"gpu_pci_mapping\" \"x\" {\n  name = \"acc-refused\"\n" + c.body + "}\n",
					PlanOnly:    true,
					ExpectError: errorText(c.want...),
				}},
			})
			require.Nil(t, mappingLines(t, "acc-refused"))
		})
	}
}

// The resource example applies as written with the environment's token:
// pve-l40s-b's two L40S as one pool.
func TestAccPCIMapping_resourceExampleApplies(t *testing.T) {
	testAccPreCheck(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `provider "gpu" {}` + "\n" + readExample(t, "examples", "resources", "gpu_pci_mapping", "resource.tf"),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("gpu_pci_mapping.l40s_pool", tfjsonpath.New("entries"), knownvalue.ListSizeExact(2)),
				statecheck.ExpectKnownOutputValue("l40s_pool_devices", knownvalue.ListExact([]knownvalue.Check{
					knownvalue.StringExact("pve-l40s-b 0000:41:00 AD102GL [L40S]"),
					knownvalue.StringExact("pve-l40s-b 0000:61:00 AD102GL [L40S]"),
				})),
			},
		}},
	})
}

// A mapping the cluster has already (the testbed's a6000-0) is not created
// over, nor taken into the state (the test's destroy would delete it): the
// plan warns (a tainted object's replacement plans as a create too), and
// the apply fails on PVE's refusal, with the import.
func TestAccPCIMapping_anExistingMappingIsRefusedWithTheImportAndNotSaved(t *testing.T) {
	testAccPreCheck(t)
	before := mappingLines(t, "a6000-0")
	require.NotEmpty(t, before)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `provider "gpu" {}

resource "gpu_pci_mapping" "mine" {
  name = "a6000-0"
  device {
    node    = "pve-a6000"
    address = "0000:01:00"
  }
}
`,
			ExpectError: errorText(`pci ID 'a6000-0' already defined`, `A PCI mapping "a6000-0" exists already`,
				"terraform import gpu_pci_mapping.<resource name> a6000-0"),
		}},
	})
	require.Equal(t, before, mappingLines(t, "a6000-0"))
}

// A plan that changes the mapping (here its description) but not its
// devices plans each entry's vm unknown: the apply reads the holders
// again. A refresh reads the cluster's mappings and VMs once, not once per
// node of the entries (pve-l40s and pve-l40s-b here).
func TestAccPCIMapping_holdersUnknownInAChangeAndReadOncePerRefresh(t *testing.T) {
	testAccPreCheck(t)
	const address = "gpu_pci_mapping.all"
	config := func(description string, extra ...string) string {
		return `
provider "gpu" {}

resource "gpu_pci_mapping" "all" {
  name        = "acc-l40s-holders"
  description = "` + description + `"
  select {
    product = "L40S"
  }
` + strings.Join(extra, "\n") + `
}
`
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config("one")},
			{
				PreConfig: pve.ResetCallCounts,
				Config:    config("one"), PlanOnly: true,
				Check: func(*terraform.State) error {
					counts := pve.CallCounts()
					reads := counts["GET /cluster/mapping/pci/{id}"]
					require.Positive(t, reads)
					require.Equal(t, reads, counts["GET /cluster/resources"], "one read of the VMs per refresh: %v", counts)
					return nil
				},
			},
			{
				Config: config("two"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(address, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(address, tfjsonpath.New("entries").AtSliceIndex(0).AtMapKey("vm")),
					plancheck.ExpectKnownValue(address, tfjsonpath.New("entries").AtSliceIndex(0).AtMapKey("path"), knownvalue.StringExact("0000:c1:00")),
				}},
			},
			// The timeouts alone: an update that writes nothing to PVE.
			{
				PreConfig: pve.ResetCallCounts,
				Config:    config("two", `  timeouts {`, `    update = "3m"`, `  }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(address, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					counts := pve.CallCounts()
					require.Zero(t, counts["PUT /cluster/mapping/pci/{id}"], "%v", counts)
					return nil
				},
			},
		},
	})
}

// Two gpu_pci_mapping resources of one apply claiming the same card: both
// plans pass (neither mapping exists yet), and the second is refused before
// it is written. b waits for a (its description names a's id), so a is
// written first and b's apply-time plan already sees it; two resources
// written at once are caught by the check right before each write
// (overlapsAtWrite, whose unit test covers it: no test here can order two
// concurrent creates). The testbed's a6000-1 points at the other A6000
// meanwhile, which leaves 0000:02:00 free.
func TestAccPCIMapping_twoResourcesOfOneApplyClaimingOneCard(t *testing.T) {
	testAccPreCheck(t)
	ctx, root := context.Background(), rootClient(t)
	setMap := func(path string, group int) {
		m, found, err := root.ReadPCIMapping(ctx, pveemu.MappingA6000Second)
		require.NoError(t, err)
		require.True(t, found)
		m.Entries = []proxmox.PCIMappingEntry{{Node: pveemu.NodeA6000, Path: path, ID: "10de:2230", SubsystemID: "10de:1459", IOMMUGroup: group}}
		require.NoError(t, root.UpdatePCIMapping(ctx, m, m.Digest))
	}
	setMap("0000:01:00", 14)
	t.Cleanup(func() { setMap("0000:02:00", 15) })
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `provider "gpu" {}

resource "gpu_pci_mapping" "a" {
  name = "acc-a6000-a"
  device {
    node    = "pve-a6000"
    address = "0000:02:00"
  }
}

resource "gpu_pci_mapping" "b" {
  name        = "acc-a6000-b"
  description = "after ${gpu_pci_mapping.a.id}"
  device {
    node    = "pve-a6000"
    address = "0000:02:00"
  }
}
`,
			ExpectError: errorText("Device in another mapping", `0000:02:00 on node pve-a6000 is in mapping "acc-a6000-a" already`),
		}},
		CheckDestroy: func(*terraform.State) error {
			require.Nil(t, mappingLines(t, "acc-a6000-a"))
			return nil
		},
	})
	require.Nil(t, mappingLines(t, "acc-a6000-b"), "the refused mapping was never written")
}
