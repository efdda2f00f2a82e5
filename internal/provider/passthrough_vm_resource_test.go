package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// pveProviderFactories serve the provider twice: as gpu and as gpuroot.
// Terraform runs one provider process per provider configuration, but the
// in-process server terraform-plugin-testing attaches serves every alias
// of one name, and a second Configure would replace the first one's
// settings: so root@pam's configuration gets a server of its own.
var pveProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"gpu":     providerserver.NewProtocol6WithError(New("test")()),
	"gpuroot": providerserver.NewProtocol6WithError(New("test")()),
	// gpuroottoken is root@pam's API token, which PVE refuses raw devices too.
	"gpuroottoken": providerserver.NewProtocol6WithError(New("test")()),
	// gpunomapping is a token without Mapping.Use.
	"gpunomapping": providerserver.NewProtocol6WithError(New("test")()),
}

// pveProviders is the default provider, which reaches the emulator with
// the module's defaults (no proxmox block: the PM_* environment, so the
// privilege-separated token and TLS verified against PM_CA_CERT_FILE), and
// gpuroot, the same provider configured explicitly as root@pam with a
// password (resources use it with provider = gpuroot).
func pveProviders() string {
	return fmt.Sprintf(`
provider "gpu" {}

provider "gpuroot" {
  proxmox {
    endpoint       = %q
    username       = %q
    password       = %q
    ca_certificate = file(%q)
  }
}
`, pve.URL(), pveemu.RootUser, pveemu.RootPassword, pve.CAFile())
}

// pveVM is a gpu_passthrough_vm cloned from the nodes' template, whose EFI
// disk (kept by the clone) has the Secure Boot keys enrolled, and body (gpu
// blocks and the rest) inside.
func pveVM(name, provider, node, body string) string {
	p := ""
	if provider != "" {
		p = "provider = " + provider
	}
	return fmt.Sprintf(`
resource "gpu_passthrough_vm" %[1]q {
  %[2]s
  node = %[3]q
  name = %[1]q
  clone {
    source = %[4]q
  }
  efi_disk {
    storage           = "local-lvm"
    pre_enrolled_keys = true
  }
%[5]s
}
`, name, p, node, pveemu.TemplateName, body)
}

// vmidOf is the vmid of address in s.
func vmidOf(t *testing.T, s *terraform.State, address string) int {
	t.Helper()
	rs, ok := s.RootModule().Resources[address]
	require.True(t, ok, address)
	id, err := strconv.Atoi(rs.Primary.Attributes["vmid"])
	require.NoError(t, err)
	return id
}

// errorText matches an error holding each part in order, wherever
// Terraform wraps its lines.
func errorText(parts ...string) *regexp.Regexp {
	quoted := make([]string, len(parts))
	for i, p := range parts {
		quoted[i] = strings.Join(strings.Fields(regexp.QuoteMeta(p)), `\s+`)
	}
	return regexp.MustCompile(`(?s)` + strings.Join(quoted, ".*"))
}

// vmCreates counts the VM creations (create and clone) the emulator saw.
func vmCreates() int {
	counts := pve.CallCounts()
	return counts["POST /nodes/{node}/qemu"] + counts["POST /nodes/{node}/qemu/{vmid}/clone"]
}

func TestAccPassthroughVM_mappedGPUByTokenAndRawGPUByRootPam(t *testing.T) {
	testAccPreCheck(t)
	config := pveProviders() +
		pveVM("mapped", "", pveemu.NodeA6000, `
  gpu {
    mapping = "a6000-0"
  }
`) + pveVM("raw", "gpuroot", pveemu.NodeA6000, `
  gpu {
    pci_address = "0000:02:00"
    primary_gpu = true
  }
`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pveProviderFactories,
		Steps: []resource.TestStep{
			// Create and Read: the token passes a GPU by mapping, root@pam
			// one by its address; both VMs run with rombar explicit.
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gpu_passthrough_vm.mapped", tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue("gpu_passthrough_vm.mapped", tfjsonpath.New("gpus").AtSliceIndex(0).AtMapKey("pci_address"), knownvalue.StringExact("0000:01:00.0")),
					statecheck.ExpectKnownValue("gpu_passthrough_vm.mapped", tfjsonpath.New("gpus").AtSliceIndex(0).AtMapKey("device_id"), knownvalue.StringExact("0x2230")),
					statecheck.ExpectKnownValue("gpu_passthrough_vm.mapped", tfjsonpath.New("gpus").AtSliceIndex(0).AtMapKey("iommu_group"), knownvalue.Int64Exact(14)),
					statecheck.ExpectKnownValue("gpu_passthrough_vm.raw", tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue("gpu_passthrough_vm.raw", tfjsonpath.New("gpus").AtSliceIndex(0).AtMapKey("iommu_group"), knownvalue.Int64Exact(15)),
				},
				Check: func(s *terraform.State) error {
					mapped, raw := vmidOf(t, s, "gpu_passthrough_vm.mapped"), vmidOf(t, s, "gpu_passthrough_vm.raw")
					config, ok := pve.VMConfig(pveemu.NodeA6000, mapped)
					require.True(t, ok)
					require.Equal(t, "mapping=a6000-0,pcie=1,rombar=1", config["hostpci0"])
					require.Equal(t, "0", config["balloon"], "ballooning off")
					require.Equal(t, "q35", config["machine"])
					require.Equal(t, "ovmf", config["bios"])
					config, ok = pve.VMConfig(pveemu.NodeA6000, raw)
					require.True(t, ok)
					require.Equal(t, "0000:02:00,pcie=1,x-vga=1,rombar=1", config["hostpci0"])
					require.Equal(t, "running", pve.VMStatus(pveemu.NodeA6000, mapped))
					require.Equal(t, "running", pve.VMStatus(pveemu.NodeA6000, raw))
					return nil
				},
			},
		},
	})
}

func TestAccPassthroughVM_twoGPUsImportDriftRestartAndOutOfBandDelete(t *testing.T) {
	testAccPreCheck(t)
	const address = "gpu_passthrough_vm.two"
	vm := func(allowRestart bool, secondROMBar bool) string {
		return pveProviders() + pveVM("two", "gpuroot", pveemu.NodeA6000, fmt.Sprintf(`
  allow_restart = %t
  memory_mib    = 16384
  gpu {
    mapping     = "a6000-0"
    primary_gpu = true
  }
  gpu {
    pci_address = "0000:02:00"
    pcie        = false
    rombar      = %t
  }
`, allowRestart, secondROMBar))
	}
	var vmid int
	remember := func(s *terraform.State) error { vmid = vmidOf(t, s, address); return nil }
	hostpci := func(key string) string {
		config, ok := pve.VMConfig(pveemu.NodeA6000, vmid)
		require.True(t, ok, "VM %d exists", vmid)
		return config[key]
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pveProviderFactories,
		Steps: []resource.TestStep{
			// Create and Read: one GPU by mapping as the primary display,
			// one by address (all functions, as all_functions defaults),
			// without PCIe and with its ROM BAR off, as asked.
			{
				Config: vm(true, false),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(address, tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue(address, tfjsonpath.New("gpus"), knownvalue.ListSizeExact(2)),
					statecheck.ExpectKnownValue(address, tfjsonpath.New("gpus").AtSliceIndex(1).AtMapKey("value"), knownvalue.StringExact("0000:02:00,rombar=0")),
					statecheck.ExpectKnownValue(address, tfjsonpath.New("gpus").AtSliceIndex(1).AtMapKey("pci_address"), knownvalue.StringExact("0000:02:00.0")),
				},
				Check: func(s *terraform.State) error {
					require.NoError(t, remember(s))
					require.Equal(t, "mapping=a6000-0,pcie=1,x-vga=1,rombar=1", hostpci("hostpci0"))
					require.Equal(t, "0000:02:00,rombar=0", hostpci("hostpci1"))
					require.Equal(t, "16384", hostpci("memory"))
					return nil
				},
			},
			// ImportState: node/vmid.
			{
				ResourceName:      address,
				ImportState:       true,
				ImportStateVerify: true,
				ImportStateIdFunc: func(s *terraform.State) (string, error) {
					return pveemu.NodeA6000 + "/" + strconv.Itoa(vmidOf(t, s, address)), nil
				},
				ImportStateVerifyIgnore: []string{"timeouts", "clone", "allow_restart", "network", "disk", "cloud_init", "ipv4"},
			},

			// Drift: hostpci1 removed outside Terraform shows in the plan,
			// and apply (allow_restart) puts it back and the VM runs.
			{
				PreConfig: func() { require.NoError(t, pve.SetVMConfigOutOfBand(pveemu.NodeA6000, vmid, "hostpci1", "")) },
				Config:    vm(true, false),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(address, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(address, tfjsonpath.New("gpu"), knownvalue.ListSizeExact(2)),
				}},
				Check: func(*terraform.State) error {
					require.Equal(t, "0000:02:00,rombar=0", hostpci("hostpci1"))
					require.Equal(t, "running", pve.VMStatus(pveemu.NodeA6000, vmid))
					return nil
				},
			},
			// Drift: stopped outside Terraform, the plan starts it.
			{
				PreConfig: func() { require.NoError(t, pve.StopVMOutOfBand(pveemu.NodeA6000, vmid)) },
				Config:    vm(true, false),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(address, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(address, tfjsonpath.New("started"), knownvalue.Bool(true)),
					plancheck.ExpectKnownValue(address, tfjsonpath.New("status"), knownvalue.StringExact("running")),
					// gpu[0] is by mapping: what it resolves to depends on the
					// mapping's entries, which the same apply may change, so
					// gpus is unknown in any plan that changes the VM.
					plancheck.ExpectUnknownValue(address, tfjsonpath.New("gpus")),
				}},
				Check: func(*terraform.State) error {
					require.Equal(t, "running", pve.VMStatus(pveemu.NodeA6000, vmid))
					return nil
				},
			},
			// A GPU change on the running VM without allow_restart is a plan
			// error, and nothing changes.
			{
				Config:      vm(false, true),
				ExpectError: errorText("Change needs a restart", "only while the VM is stopped (changed: gpu)", "allow_restart = true"),
			},
			// With it: stop, change, start.
			{
				PreConfig: func() {
					require.Equal(t, "0000:02:00,rombar=0", hostpci("hostpci1"), "the refused plan changed nothing")
					pve.ResetCallCounts()
				},
				Config: vm(true, true),
				Check: func(*terraform.State) error {
					require.Equal(t, "0000:02:00,rombar=1", hostpci("hostpci1"))
					require.Equal(t, "running", pve.VMStatus(pveemu.NodeA6000, vmid))
					counts := pve.CallCounts()
					require.Equal(t, 1, counts["POST /nodes/{node}/qemu/{vmid}/status/stop"], "%v", counts)
					require.Equal(t, 1, counts["POST /nodes/{node}/qemu/{vmid}/status/start"], "%v", counts)
					return nil
				},
			},
			// Deleted outside Terraform: removed from the state, created again.
			{
				PreConfig: func() { require.NoError(t, pve.DeleteVMOutOfBand(pveemu.NodeA6000, vmid)) },
				Config:    vm(true, true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(address, plancheck.ResourceActionCreate),
				}},
				Check: func(s *terraform.State) error {
					id := vmidOf(t, s, address)
					require.Equal(t, "running", pve.VMStatus(pveemu.NodeA6000, id))
					config, ok := pve.VMConfig(pveemu.NodeA6000, id)
					require.True(t, ok)
					require.Equal(t, "0000:02:00,rombar=1", config["hostpci1"])
					return nil
				},
			},
		},
	})
}

func TestAccPassthroughVM_preflightRefusesBeforeAnyVMExists(t *testing.T) {
	testAccPreCheck(t)
	rootTokenProvider := fmt.Sprintf(`
provider "gpuroottoken" {
  proxmox {
    api_token_id     = %q
    api_token_secret = %q
  }
}

provider "gpunomapping" {
  proxmox {
    api_token_id     = %q
    api_token_secret = %q
  }
}
`, pveemu.RootTokenID, pveemu.RootTokenSecret, pveemu.NoMappingTokenID, pveemu.NoMappingTokenSecret)
	refused := func(description, config string, want ...string) resource.TestStep {
		return resource.TestStep{
			PreConfig:   func() { t.Log(description); pve.ResetCallCounts() },
			Config:      pveProviders() + rootTokenProvider + config,
			ExpectError: errorText(want...),
		}
	}
	noVMCreated := func() { require.Zero(t, vmCreates(), "no VM was created: %v", pve.CallCounts()) }
	gpu := func(block string) string { return "  gpu {\n" + block + "\n  }\n" }
	var steps []resource.TestStep
	for _, s := range []resource.TestStep{
		refused("a raw address with a privilege-separated token",
			pveVM("vm", "", pveemu.NodeA6000, gpu(`pci_address = "0000:01:00"`)),
			`gpu[0].pci_address`, "authenticates as terraform@pve!gpu: use a mapping, or root@pam credentials"),
		refused("a raw address with root@pam's own token",
			pveVM("vm", "gpuroottoken", pveemu.NodeA6000, gpu(`pci_address = "0000:01:00"`)),
			"authenticates as root@pam!gpu: use a mapping, or root@pam credentials"),
		refused("an address the node does not have",
			pveVM("vm", "gpuroot", pveemu.NodeA6000, gpu(`pci_address = "0000:09:00"`)),
			`gpu[0].pci_address "0000:09:00": node pve-a6000 has no PCI device at that address`),
		refused("a device that is not an NVIDIA GPU",
			pveVM("vm", "gpuroot", pveemu.NodeA6000, gpu(`pci_address = "0000:00:14.0"`)),
			"0000:00:14.0", "not an NVIDIA display or 3D controller"),
		refused("an H100 whose IOMMU group holds a NIC",
			pveVM("vm", "gpuroot", pveemu.NodeH100, gpu(`pci_address = "0000:41:00"`)),
			"IOMMU group 30 of node pve-h100 holds 0000:41:00.0", "and also 0000:42:00.0"),
		refused("the GPU without its audio function",
			pveVM("vm", "gpuroot", pveemu.NodeA6000, gpu("pci_address = \"0000:01:00.0\"\n    all_functions = false")),
			"IOMMU group 14 of node pve-a6000 holds 0000:01:00.0", "and also 0000:01:00.1"),
		refused("a mapping the token may not use",
			pveVM("vm", "gpunomapping", pveemu.NodeA6000, gpu(`mapping = "a6000-0"`)),
			`gpu[0].mapping "a6000-0"`, "authenticates as terraform@pve!no-mapping, which lacks Mapping.Use on /mapping/pci/a6000-0"),
		refused("a mapping that does not exist",
			pveVM("vm", "", pveemu.NodeA6000, gpu(`mapping = "a100-0"`)),
			`gpu[0].mapping "a100-0": the cluster has no PCI resource mapping`),
		refused("a mapping of another node",
			pveVM("vm", "", pveemu.NodeL40S, gpu(`mapping = "a6000-0"`)),
			"maps devices on pve-a6000 (0000:01:00), not on node pve-l40s"),
		refused("a vGPU type the GPU does not offer",
			pveVM("vm", "", pveemu.NodeL40S, gpu("mapping = \"l40s-vgpu\"\n    mdev = \"nvidia-9999\"")),
			`gpu[0].mdev "nvidia-9999"`, "it offers nvidia-1155"),
		refused("an address without its domain",
			pveVM("vm", "gpuroot", pveemu.NodeA6000, gpu(`pci_address = "01:00.0"`)),
			"must be a PCI address in lowercase hex: 0000:01:00 (every function) or 0000:01:00.0 (one function)"),
		refused("more than 16 GPUs",
			pveVM("vm", "", pveemu.NodeA6000, strings.Repeat(gpu(`mapping = "a6000-0"`), 17)),
			"gpu", "list must contain at most 16 elements"),
		refused("both a mapping and an address",
			pveVM("vm", "gpuroot", pveemu.NodeA6000, gpu("mapping = \"a6000-0\"\n    pci_address = \"0000:01:00\"")),
			`gpu[0] sets both mapping and pci_address: keep one`),
		refused("pcie on an i440fx machine",
			pveVM("vm", "", pveemu.NodeA6000, "  machine = \"pc\"\n"+gpu(`mapping = "a6000-0"`)),
			`gpu[0].pcie is true and machine = "pc"`),
		refused("OVMF without an EFI disk", `
resource "gpu_passthrough_vm" "vm" {
  node = "pve-a6000"
  name = "vm"
  gpu {
    mapping = "a6000-0"
  }
}
`, `bios = "ovmf" (the default) needs an efi_disk block`),
		// Known only at apply (the node comes from another resource): the
		// preflight runs in the create, still before any write.
		refused("a raw address with a token, the node known only at apply", `
resource "terraform_data" "node" {
  input = "pve-a6000"
}
resource "gpu_passthrough_vm" "vm" {
  node = terraform_data.node.output
  name = "vm"
  efi_disk {
    storage = "local-lvm"
  }
  gpu {
    pci_address = "0000:01:00"
  }
}
`, "use a mapping, or root@pam credentials"),
	} {
		previous := s.PreConfig
		if len(steps) > 0 {
			s.PreConfig = func() { noVMCreated(); previous() }
		}
		steps = append(steps, s)
	}
	// The last refusal's count, checked by a step that changes nothing.
	steps = append(steps, resource.TestStep{
		PreConfig: noVMCreated,
		Config:    pveProviders(),
	})
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: pveProviderFactories, Steps: steps})
}

func TestAccPassthroughVM_gpuInUseAndVGPUExhaustedRefused(t *testing.T) {
	testAccPreCheck(t)
	holders := pveProviders() + pveVM("holder", "", pveemu.NodeA6000, `
  gpu {
    mapping = "a6000-0"
  }
`) + pveVM("vgpu", "", pveemu.NodeL40S, `
  gpu {
    mapping = "l40s-vgpu"
    mdev    = "nvidia-1159"
  }
`)
	var holder int
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pveProviderFactories,
		Steps: []resource.TestStep{
			// A running VM with the first A6000, and one with the L40S's
			// only 48Q vGPU instance (by mapping, with the token).
			{
				Config: holders,
				Check: func(s *terraform.State) error {
					holder = vmidOf(t, s, "gpu_passthrough_vm.holder")
					config, ok := pve.VMConfig(pveemu.NodeL40S, vmidOf(t, s, "gpu_passthrough_vm.vgpu"))
					require.True(t, ok)
					require.Equal(t, "mapping=l40s-vgpu,mdev=nvidia-1159,pcie=1,rombar=1", config["hostpci0"])
					return nil
				},
			},
			{
				PreConfig: pve.ResetCallCounts,
				Config: holders + pveVM("second", "gpuroot", pveemu.NodeA6000, `
  gpu {
    pci_address = "0000:01:00"
  }
`),
				ExpectError: errorText(`gpu[0].pci_address "0000:01:00": 0000:01:00 is passed through to VM`, "(holder) on node pve-a6000", "which is running"),
			},
			{
				PreConfig: func() {
					require.Zero(t, vmCreates())
					require.Positive(t, pve.CallCounts()["GET /cluster/resources"], "the preflight read the cluster's VMs")
				},
				Config: holders + pveVM("second", "", pveemu.NodeL40S, `
  gpu {
    mapping = "l40s-vgpu"
    mdev    = "nvidia-1159"
  }
`),
				ExpectError: errorText(`gpu[0].mdev "nvidia-1159": 0000:c1:00.0 has no instance of it left`),
			},
			{
				PreConfig: func() { require.Zero(t, vmCreates(), "%v", pve.CallCounts()) },
				Config: holders + pveVM("dup", "", pveemu.NodeA6000, `
  vmid = gpu_passthrough_vm.holder.vmid
  gpu {
    mapping = "a6000-1"
  }
`),
				ExpectError: errorText("VM ID in use", `is VM "holder" on node pve-a6000 already`),
			},
			{
				PreConfig: func() { require.Zero(t, vmCreates(), "%v", pve.CallCounts()); require.NotZero(t, holder) },
				Config:    holders,
			},
		},
	})
}

func TestAccPassthroughVM_secretsNeverInDebugLogs(t *testing.T) {
	testAccPreCheck(t)
	logFile := filepath.Join(t.TempDir(), "terraform.log")
	t.Setenv("TF_LOG", "DEBUG")
	t.Setenv("TF_ACC_LOG_PATH", logFile)
	// The secrets come from the environment, as in a CI job: the
	// configuration (which the test harness logs) holds none.
	run := func(env map[string]string, config string) {
		for k, v := range env {
			t.Setenv(k, v)
		}
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			Steps:                    []resource.TestStep{{Config: `provider "gpu" {}` + "\n" + config}},
		})
	}
	// root@pam's password: a ticket login, a VM with a raw GPU.
	run(map[string]string{"PM_API_TOKEN_ID": "", "PM_API_TOKEN_SECRET": "", "PM_USER": pveemu.RootUser, "PM_PASS": pveemu.RootPassword},
		pveVM("logged", "", pveemu.NodeA6000, `
  gpu {
    pci_address = "0000:02:00"
  }
`))
	// The token's secret: the inventory.
	run(map[string]string{"PM_API_TOKEN_ID": pveemu.TokenID, "PM_API_TOKEN_SECRET": pveemu.TokenSecret, "PM_USER": "", "PM_PASS": ""}, `
data "gpu_inventory" "pve" {
  source = "proxmox"
}
`)
	raw, err := os.ReadFile(logFile)
	require.NoError(t, err)
	logs := string(raw)
	require.Contains(t, logs, "connected to Proxmox VE", "the provider's debug lines are in this log")
	require.Contains(t, logs, "created Proxmox VM")
	require.Contains(t, logs, "read the Proxmox GPU inventory")
	require.True(t, loggedPVECall(logs, "POST", `/access/ticket`, 200), "every call is logged, the login's too")
	require.True(t, loggedPVECall(logs, "GET", `/nodes/pve-a6000/qemu/\d+/status/current`, 200))
	for name, secret := range map[string]string{"root@pam's password": pveemu.RootPassword, "the token secret": pveemu.TokenSecret} {
		require.NotContains(t, logs, secret, name)
	}
	require.NotContains(t, logs, "PVE:root@pam:", "no ticket")
}

// loggedPVECall says whether logs hold the debug line of a Proxmox VE
// call with that method, a path matching pathPattern and that status, its
// fields in any order (hclog writes them in map order).
func loggedPVECall(logs, method, pathPattern string, status int) bool {
	fields := []*regexp.Regexp{
		regexp.MustCompile(`\bmethod=` + method + `\b`),
		regexp.MustCompile(`\bpath="?` + pathPattern + `("|\s|$)`),
		regexp.MustCompile(`\bstatus=` + strconv.Itoa(status) + `\b`),
	}
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, "called Proxmox VE") {
			continue
		}
		if !slices.ContainsFunc(fields, func(f *regexp.Regexp) bool { return !f.MatchString(line) }) {
			return true
		}
	}
	return false
}

func TestAccPassthroughVM_failedStartTaskKeepsTheVMTaintedThenReplaced(t *testing.T) {
	testAccPreCheck(t)
	const address = "gpu_passthrough_vm.failing"
	config := pveProviders() + pveVM("failing", "", pveemu.NodeA6000, `
  gpu {
    mapping = "a6000-1"
  }
`)
	var first int
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pveProviderFactories,
		Steps: []resource.TestStep{
			// The start task fails after the VM exists: the apply fails with
			// the task's exit status and log, and the VM stays in the state.
			{
				PreConfig: func() {
					pve.FailNextTask("qmstart", "start failed: QEMU exited with code 1",
						"kvm: -device vfio-pci,host=0000:02:00.0: vfio 0000:02:00.0: failed to setup container for group 15")
				},
				Config:      config,
				ExpectError: errorText("Proxmox task qmstart", "start failed: QEMU exited with code 1", "failed to setup container for group 15", "kept in the state, tainted"),
			},
			// The next apply replaces the tainted VM.
			{
				PreConfig: func() {
					vms := 0
					for id := 100; id < 200; id++ {
						if pve.VMStatus(pveemu.NodeA6000, id) == "stopped" {
							first, vms = id, vms+1
						}
					}
					require.Equal(t, 1, vms, "the failed VM exists, stopped")
					pve.ResetCallCounts()
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(address, plancheck.ResourceActionReplace),
				}},
				Check: func(s *terraform.State) error {
					id := vmidOf(t, s, address)
					require.Equal(t, "running", pve.VMStatus(pveemu.NodeA6000, id))
					require.Equal(t, 1, pve.CallCounts()["DELETE /nodes/{node}/qemu/{vmid}"], "the tainted VM %d was destroyed", first)
					return nil
				},
			},
		},
	})
}

func TestAccPassthroughVM_importedVMTakesTheConfigurationInPlace(t *testing.T) {
	testAccPreCheck(t)
	body := `
  gpu {
    mapping = "a6000-0"
  }
`
	made := pveProviders() + pveVM("made", "", pveemu.NodeA6000, body)
	// The same VM under a second address, as a user writes the
	// configuration of a VM they import.
	// An import step writes the configuration as given: it names the
	// providers itself.
	both := `
terraform {
  required_providers {
    gpu = {
      source = "registry.terraform.io/gpuinfra/gpu"
    }
    gpuroot = {
      source = "registry.terraform.io/gpuinfra/gpuroot"
    }
  }
}
` + made + strings.Replace(pveVM("made", "", pveemu.NodeA6000, body), `resource "gpu_passthrough_vm" "made"`, `resource "gpu_passthrough_vm" "imported"`, 1)
	var vmid int
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: pveProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: made,
				Check:  func(s *terraform.State) error { vmid = vmidOf(t, s, "gpu_passthrough_vm.made"); return nil },
			},
			{
				Config:             both,
				ResourceName:       "gpu_passthrough_vm.imported",
				ImportState:        true,
				ImportStatePersist: true,
				ImportStateIdFunc:  func(*terraform.State) (string, error) { return pveemu.NodeA6000 + "/" + strconv.Itoa(vmid), nil },
			},
			// clone and disk, which an import does not read, are taken in
			// place: no replacement of the imported VM.
			{
				Config: both,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("gpu_passthrough_vm.imported", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("gpu_passthrough_vm.made", plancheck.ResourceActionNoop),
				}},
				Check: func(*terraform.State) error {
					require.Equal(t, "running", pve.VMStatus(pveemu.NodeA6000, vmid))
					return nil
				},
			},
		},
	})
}
