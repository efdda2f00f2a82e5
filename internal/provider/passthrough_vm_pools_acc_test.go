package provider

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// The GPU pool tests run on pve-l40s-b, whose two L40S no mapping of the
// testbed covers: each test makes its pool with one call to the PVE API
// as root@pam (POST /cluster/mapping/pci), entries filled from the node's
// hardware, and deletes it when done.

// poolDevices are pve-l40s-b's two L40S, in the order the pools list them.
var poolDevices = []string{"0000:41:00", "0000:61:00"}

// createPoolMapping makes mapping id with an entry for each of
// pve-l40s-b's L40S, removed when the test ends. It is marked mdev: the
// L40S can make vGPUs, and PVE 9 refuses the start of a VM whose mapping's
// mdev flag differs from the device's (qemu-server's parse_hostpci calls
// pve-guest-common's assert_valid with the mapping's config), whether the
// VM takes the device whole or a vGPU of it.
func createPoolMapping(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	ca, err := os.ReadFile(pve.CAFile())
	require.NoError(t, err)
	client, err := proxmox.Settings{Endpoint: pve.URL(), Username: pveemu.RootUser, Password: pveemu.RootPassword, CACertificatePEM: string(ca)}.Connect(ctx)
	require.NoError(t, err)
	functions, err := client.PCIFunctions(ctx, pveemu.NodeL40SB)
	require.NoError(t, err)
	m := proxmox.PCIMapping{ID: id, Description: "test pool of pve-l40s-b's L40S", Mdev: true}
	for _, device := range poolDevices {
		var fns []proxmox.PCIFunction
		for _, fn := range functions {
			if proxmox.PCIDevice(fn.Address) == device {
				fns = append(fns, fn)
			}
		}
		require.NotEmpty(t, fns, "pve-l40s-b has %s", device)
		m.Entries = append(m.Entries, proxmox.EntryForDevice(pveemu.NodeL40SB, fns, true))
	}
	require.NoError(t, client.CreatePCIMapping(ctx, m))
	t.Cleanup(func() { require.NoError(t, client.DeletePCIMapping(context.Background(), id)) })
}

// poolVM is a VM on pve-l40s-b with vmid and the pool's GPU (a vGPU of type mdev when set).
func poolVM(name string, vmid int, mapping, mdev, extra string) string {
	gpu := fmt.Sprintf("  vmid = %d\n%s  gpu {\n    mapping = %q\n", vmid, extra, mapping)
	if mdev != "" {
		gpu += fmt.Sprintf("    mdev    = %q\n", mdev)
	}
	return pveVM(name, "", pveemu.NodeL40SB, gpu+"  }\n")
}

// attrsOf are the flat state attributes of address in s.
func attrsOf(t *testing.T, s *terraform.State, address string) map[string]string {
	t.Helper()
	rs, ok := s.RootModule().Resources[address]
	require.True(t, ok, address)
	return rs.Primary.Attributes
}

// poolMapping is gpu_inventory.pci_mappings' element of id in the data source at address, flat.
func poolMapping(t *testing.T, s *terraform.State, address, id string) map[string]string {
	t.Helper()
	attrs := attrsOf(t, s, address)
	n, err := strconv.Atoi(attrs["pci_mappings.#"])
	require.NoError(t, err)
	for i := range n {
		prefix := "pci_mappings." + strconv.Itoa(i) + "."
		if attrs[prefix+"id"] != id {
			continue
		}
		out := map[string]string{}
		for k, v := range attrs {
			if rest, ok := strings.CutPrefix(k, prefix); ok {
				out[rest] = v
			}
		}
		return out
	}
	require.Failf(t, "no such mapping", "pci_mappings has no %s", id)
	return nil
}

// Two VMs on a two-device pool get a device each, which gpus and the
// inventory show; a third, added in a later plan, is refused at plan
// naming both holders; once one of them is stopped, the third applies
// and gets the device the stopped one had. The provider uses the token
// with exactly the documented role: reading which device a VM got (the
// QEMU monitor) is in it.
func TestAccPassthroughVM_poolGivesDistinctDevicesAndRefusesAThirdAtPlan(t *testing.T) {
	testAccPreCheck(t)
	t.Setenv("PM_API_TOKEN_ID", pveemu.RoleTokenID)
	t.Setenv("PM_API_TOKEN_SECRET", pveemu.RoleTokenSecret)
	const pool = "test-l40s-pool"
	createPoolMapping(t, pool)
	a, b, c := poolVM("pool-a", 4301, pool, "", ""), poolVM("pool-b", 4302, pool, "", ""), poolVM("pool-c", 4303, pool, "", "")
	aStopped := poolVM("pool-a", 4301, pool, "", "  started = false\n")
	inventory := `
data "gpu_inventory" "pools" {
  source     = "proxmox"
  depends_on = [gpu_passthrough_vm.pool-a, gpu_passthrough_vm.pool-b]
  filter {
    nodes = ["pve-l40s-b"]
  }
}
`
	var aDevice string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pveProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: pveProviders() + a + b + inventory,
				Check: func(s *terraform.State) error {
					aAttrs, bAttrs := attrsOf(t, s, "gpu_passthrough_vm.pool-a"), attrsOf(t, s, "gpu_passthrough_vm.pool-b")
					aDevice = aAttrs["gpus.0.pci_address"]
					got := []string{proxmox.PCIDevice(aDevice), proxmox.PCIDevice(bAttrs["gpus.0.pci_address"])}
					require.ElementsMatch(t, poolDevices, got, "each VM got a device of its own")
					require.Equal(t, "2", aAttrs["gpus.0.candidates.#"])
					require.Equal(t, "AD102GL [L40S]", aAttrs["gpus.0.product"])

					m := poolMapping(t, s, "data.gpu_inventory.pools", pool)
					require.Equal(t, "2", m["entries.#"])
					holders := map[string]string{}
					for i := range 2 {
						e := "entries." + strconv.Itoa(i) + "."
						require.Equal(t, "true", m[e+"in_use"], m)
						require.Equal(t, "true", m[e+"valid"], m)
						holders[proxmox.PCIDevice(m[e+"path"])] = m[e+"vm_id"] + " " + m[e+"vm_name"]
					}
					require.Equal(t, "4301 pool-a", holders[proxmox.PCIDevice(aDevice)])
					require.Equal(t, pveemu.NodeL40SB, m["nodes.0.node"])
					require.Equal(t, "2", m["nodes.0.devices"])
					require.Equal(t, "0", m["nodes.0.free"])

					for _, d := range pciDevices(t, s, "data.gpu_inventory.pools") {
						if d["pci_address"] == aDevice {
							require.Equal(t, pool, d["mapping"], "the entry covering it, the pool's second one included")
							require.Equal(t, "pool-a", d["vm_name"], "the VM the pool gave it to")
							require.Equal(t, "false", d["free"])
						}
					}
					return nil
				},
			},
			{
				PreConfig: pve.ResetCallCounts,
				Config:    pveProviders() + a + b + c + inventory,
				// Both holders are named, in the pool's order (which VM got
				// which device is the start's choice).
				ExpectError: anyOrder(
					[]string{"GPU pool has no free device", `gpu[0].mapping "test-l40s-pool" is a pool of 2 devices on node pve-l40s-b`},
					[]string{`VM 4301 "pool-a", running`, `VM 4302 "pool-b", running`},
					[]string{"Stop one of those VMs"}),
			},
			{
				PreConfig: func() {
					require.Zero(t, vmCreates(), "refused at plan: nothing was created")
					require.Empty(t, pve.VMStatus(pveemu.NodeL40SB, 4303))
				},
				// Stopping a holder is applied before the third VM is planned:
				// a plan sees only what runs now.
				Config: pveProviders() + aStopped + b + inventory,
				Check: func(s *terraform.State) error {
					attrs := attrsOf(t, s, "gpu_passthrough_vm.pool-a")
					require.Equal(t, "stopped", attrs["status"])
					require.Empty(t, attrs["gpus.0.pci_address"], "a stopped VM on a pool holds no device")
					require.Equal(t, "2", attrs["gpus.0.candidates.#"])
					return nil
				},
			},
			{
				Config: pveProviders() + aStopped + b + c + inventory,
				Check: func(s *terraform.State) error {
					attrs := attrsOf(t, s, "gpu_passthrough_vm.pool-c")
					require.Equal(t, "running", attrs["status"])
					require.Equal(t, aDevice, attrs["gpus.0.pci_address"], "the third VM got the device the stopped one freed")
					return nil
				},
			},
		},
		CheckDestroy: poolVMsGone(4301, 4302, 4303),
	})
}

// anyOrder matches an error holding the parts of before in order, then
// those of either in any order, then those of after (errorText's rules).
func anyOrder(before, either, after []string) *regexp.Regexp {
	reversed := slices.Clone(either)
	slices.Reverse(reversed)
	var alternatives []string
	for _, order := range [][]string{either, reversed} {
		parts := slices.Concat(before, order, after)
		alternatives = append(alternatives, strings.TrimPrefix(errorText(parts...).String(), "(?s)"))
	}
	return regexp.MustCompile(`(?s)(?:` + strings.Join(alternatives, "|") + `)`)
}

// poolVMsGone checks that none of vmids is left on pve-l40s-b.
func poolVMsGone(vmids ...int) func(*terraform.State) error {
	return func(*terraform.State) error {
		for _, id := range vmids {
			if status := pve.VMStatus(pveemu.NodeL40SB, id); status != "" {
				return fmt.Errorf("VM %d is still there (%s)", id, status)
			}
		}
		return nil
	}
}

// Three VMs planned together on a two-device pool each see it free at plan
// time. The first clone is held until the two others run, so its VM
// passes the create's preflight and then finds no free device at start:
// the apply fails with qemu-server's error and the VMs holding the pool,
// and the VM is kept in the state, tainted. The plan of its replacement
// is no error: the tainted VM exists (on the node, by its name), so the
// full pool is a warning at plan (an error would stop `terraform destroy`,
// which plans the configuration first), and the apply's create would
// refuse the start before any write. So destroy, with its refresh, runs.
func TestAccPassthroughVM_poolRaceInOneApplyKeepsTheLoserTainted(t *testing.T) {
	testAccPreCheck(t)
	const pool = "test-l40s-race"
	createPoolMapping(t, pool)
	vmids := []int{4311, 4312, 4313}
	config := pveProviders() + poolVM("race-a", vmids[0], pool, "", "") + poolVM("race-b", vmids[1], pool, "", "") +
		poolVM("race-c", vmids[2], pool, "", "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pveProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					pve.HoldNextTask("qmclone")
					go releaseWhenRunning(t, vmids, 2)
				},
				Config: config,
				ExpectError: errorText("could not find a free device for 'hostpci0'", `gpu[0].mapping "test-l40s-race" is a pool of 2 devices`,
					"held now:", "running", "kept in the state, tainted"),
			},
			{
				RefreshState: true,
				Check: func(s *terraform.State) error {
					var tainted []string
					for _, name := range []string{"race-a", "race-b", "race-c"} {
						rs := s.RootModule().Resources["gpu_passthrough_vm."+name]
						require.NotNil(t, rs, "every VM that exists is in the state: %s", name)
						if rs.Primary.Tainted {
							tainted = append(tainted, name)
							require.Equal(t, "stopped", rs.Primary.Attributes["status"])
						}
					}
					require.Len(t, tainted, 1, "the VM that found no free device")
					return nil
				},
				// The plan after the refresh replaces the tainted VM, which the
				// pool still cannot take: a warning, as the VM exists.
				ExpectNonEmptyPlan: true,
			},
			// terraform destroy plans the configuration first (with the
			// tainted VM's replacement) and goes ahead.
			{Config: config, Destroy: true},
		},
		CheckDestroy: poolVMsGone(vmids...),
	})
}

// releaseWhenRunning lets the held tasks run once want of vmids run on
// pve-l40s-b (or after two minutes, for the step to fail on its own).
func releaseWhenRunning(t *testing.T, vmids []int, want int) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		running := 0
		for _, id := range vmids {
			if pve.VMStatus(pveemu.NodeL40SB, id) == "running" {
				running++
			}
		}
		if running >= want {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Log("releasing the held clone")
	pve.ReleaseHeldTasks()
}

// A vGPU pool: each VM started on it takes an instance of its type from
// the first device with one left, which gpu_inventory counts down.
func TestAccInventoryDataSource_vgpuPoolInstancesCountDownAsVMsStart(t *testing.T) {
	testAccPreCheck(t)
	const pool, mdev = "test-l40s-vgpu-pool", "nvidia-1155"
	createPoolMapping(t, pool)
	inventory := func(after ...string) string {
		deps := ""
		if len(after) > 0 {
			deps = "  depends_on = [" + strings.Join(after, ", ") + "]\n"
		}
		return `
data "gpu_inventory" "vgpu" {
  source = "proxmox"
` + deps + `  filter {
    nodes = ["pve-l40s-b"]
  }
}
`
	}
	v1, v2 := poolVM("vgpu-1", 4321, pool, mdev, ""), poolVM("vgpu-2", 4322, pool, mdev, "")
	left := func(want ...int) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			m := poolMapping(t, s, "data.gpu_inventory.vgpu", pool)
			require.Equal(t, "true", m["mdev"])
			var got []int
			for i := range len(poolDevices) {
				e := "entries." + strconv.Itoa(i) + "."
				for j := 0; m[e+"mdev_types."+strconv.Itoa(j)+".type"] != ""; j++ {
					if m[e+"mdev_types."+strconv.Itoa(j)+".type"] == mdev {
						n, err := strconv.Atoi(m[e+"mdev_types."+strconv.Itoa(j)+".available"])
						require.NoError(t, err)
						got = append(got, n)
					}
				}
				require.Equal(t, "false", m[e+"in_use"], "vGPU instances share the device")
			}
			require.Equal(t, want, got, "instances of %s left per device", mdev)
			return nil
		}
	}
	var before []int
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pveProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() { pve.ResetCallCounts() },
				Config:    pveProviders() + inventory(),
				Check: func(s *terraform.State) error {
					// Each read of the inventory reads the node's functions once
					// and the vGPU types of each of its two L40S once, though
					// pci_devices and pci_mappings (an mdev pool) both list them.
					calls := pve.CallCounts()
					reads := calls["GET /nodes/{node}/hardware/pci"]
					require.NotZero(t, reads)
					require.Equal(t, 2*reads, calls["GET /nodes/{node}/hardware/pci/{pci-id-or-mapping}/mdev"], "mdev reads per function")
					m := poolMapping(t, s, "data.gpu_inventory.vgpu", pool)
					for i := range len(poolDevices) {
						e := "entries." + strconv.Itoa(i) + "."
						for j := 0; m[e+"mdev_types."+strconv.Itoa(j)+".type"] != ""; j++ {
							if m[e+"mdev_types."+strconv.Itoa(j)+".type"] == mdev {
								n, _ := strconv.Atoi(m[e+"mdev_types."+strconv.Itoa(j)+".available"])
								before = append(before, n)
							}
						}
					}
					require.Len(t, before, len(poolDevices), "each device offers %s", mdev)
					return nil
				},
			},
			{
				Config: pveProviders() + v1 + inventory("gpu_passthrough_vm.vgpu-1"),
				Check: func(s *terraform.State) error {
					want := slices.Clone(before)
					want[0]-- // the first device with an instance left
					return left(want...)(s)
				},
			},
			// A vGPU from a pool holds no device: reading the VM (and the
			// inventory) back asks no QEMU monitor which one it got.
			{
				PreConfig:    func() { pve.ResetCallCounts() },
				RefreshState: true,
				Check: func(*terraform.State) error {
					require.Zero(t, pve.CallCounts()["POST /nodes/{node}/qemu/{vmid}/monitor"], "monitor reads for a vGPU")
					return nil
				},
			},
			{
				Config: pveProviders() + v1 + v2 + inventory("gpu_passthrough_vm.vgpu-1", "gpu_passthrough_vm.vgpu-2"),
				Check: func(s *terraform.State) error {
					want := slices.Clone(before)
					want[0] -= 2
					return left(want...)(s)
				},
			},
		},
		CheckDestroy: poolVMsGone(4321, 4322),
	})
}

// A full pool and destroy: Terraform's destroy plans the configuration
// first (its pre-destroy refresh is a normal plan, whose errors are fatal:
// terraform/context_plan.go destroyPlan), so the plan-time refusal of a VM
// that does not exist yet stops `terraform destroy` too. The refusal says
// so and how to go on; without the refused VM in the configuration the
// destroy runs and removes the VMs that exist.
func TestAccPassthroughVM_destroyWithAFullPoolSaysHowToGoOn(t *testing.T) {
	testAccPreCheck(t)
	const pool = "test-l40s-destroy"
	createPoolMapping(t, pool)
	a, b, c := poolVM("full-a", 4331, pool, "", ""), poolVM("full-b", 4332, pool, "", ""), poolVM("full-c", 4333, pool, "", "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pveProviderFactories,
		Steps: []resource.TestStep{
			{Config: pveProviders() + a + b},
			{Config: pveProviders() + a + b + c, ExpectError: errorText("GPU pool has no free device")},
			{
				Config: pveProviders() + a + b + c, Destroy: true,
				ExpectError: errorText("terraform destroy plans this configuration first", "-refresh=false"),
			},
			{Config: pveProviders() + a + b, Destroy: true},
		},
		CheckDestroy: poolVMsGone(4331, 4332, 4333),
	})
}
