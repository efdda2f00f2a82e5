package provider

import (
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// This file holds gpu_passthrough_vm's checks that the configuration alone
// decides (ValidateConfig): what Proxmox would refuse or break on whatever
// the host has. Unset attributes count with their defaults (machine q35,
// bios ovmf, pcie, rombar and all_functions true); unknown ones are
// skipped.

// validate checks the configuration across attributes.
func (m *passthroughVMModel) validate() diag.Diagnostics {
	var diags diag.Diagnostics
	machine, machineKnown := m.Machine.ValueString(), !m.Machine.IsUnknown()
	if m.Machine.IsNull() {
		machine = "q35"
	}
	bios := stringOr(m.BIOS, "ovmf")
	if !m.BIOS.IsUnknown() && bios == "ovmf" && len(m.EFIDisk) == 0 {
		diags.AddAttributeError(path.Root("efi_disk"), "OVMF without an EFI disk",
			"bios = \"ovmf\" (the default) needs an efi_disk block: without one Proxmox starts the VM on a temporary EFI vars "+
				"disk (\"WARN: no efidisk configured! Using temporary efivars disk.\") and every UEFI setting, boot order included, is "+
				"lost at the next start. Add efi_disk { storage = \"local-lvm\" }, or set bios = \"seabios\"")
	}
	primary := -1
	seen := map[string]int{}
	for i, g := range m.GPU {
		at := path.Root("gpu").AtListIndex(i)
		if machineKnown && !g.PCIE.IsUnknown() && boolOr(g.PCIE, true) && !q35MachinePattern.MatchString(machine) {
			diags.AddAttributeError(at.AtName("pcie"), "PCI Express needs a q35 machine",
				fmt.Sprintf("gpu[%d].pcie is true and machine = %q is an i440fx machine, which has no PCI Express bus: Proxmox accepts the "+
					"configuration and then fails the VM's start (\"q35 machine model is not enabled\"). Set machine = \"q35\" (the "+
					"default), or pcie = false", i, machine))
		}
		switch {
		case known(g.Mapping) && known(g.PCIAddress):
			diags.AddAttributeError(at.AtName("pci_address"), "Both mapping and pci_address",
				fmt.Sprintf("gpu[%d] sets both mapping and pci_address: keep one, mapping (a cluster PCI mapping, which API tokens may "+
					"pass) or pci_address (a raw address, which only root@pam with a password may pass)", i))
		case g.Mapping.IsNull() && g.PCIAddress.IsNull():
			diags.AddAttributeError(at, "GPU not named",
				fmt.Sprintf("gpu[%d] sets neither mapping nor pci_address: name the GPU by a cluster PCI mapping (mapping = \"a6000-0\") "+
					"or by its address (pci_address = \"0000:01:00\"); gpu_inventory with source = \"proxmox\" lists both", i))
		}
		address := g.PCIAddress.ValueString()
		if !g.AllFunctions.IsNull() && !g.AllFunctions.IsUnknown() && !g.Mapping.IsNull() {
			diags.AddAttributeError(at.AtName("all_functions"), "all_functions applies to pci_address",
				fmt.Sprintf("gpu[%d] uses mapping %q, whose path decides which functions go along: remove all_functions, or edit the "+
					"mapping's path (0000:01:00 for every function)", i, g.Mapping.ValueString()))
		}
		if address != "" && !g.AllFunctions.IsUnknown() && !boolOr(g.AllFunctions, true) && !proxmox.PCIHasFunction(address) {
			diags.AddAttributeError(at.AtName("pci_address"), "PCI function missing",
				fmt.Sprintf("gpu[%d].pci_address %q names every function of the device and all_functions is false: write the one "+
					"function to pass, e.g. %q, or set all_functions = true", i, address, address+".0"))
		}
		if address != "" && !g.Mdev.IsNull() && !proxmox.PCIHasFunction(address) {
			diags.AddAttributeError(at.AtName("pci_address"), "vGPU needs one PCI function",
				fmt.Sprintf("gpu[%d] asks for vGPU type %q, which is created on one function: write pci_address as %q", i,
					g.Mdev.ValueString(), address+".0"))
		}
		if !g.Mdev.IsNull() && !g.PrimaryGPU.IsUnknown() && g.PrimaryGPU.ValueBool() {
			diags.AddAttributeError(at.AtName("primary_gpu"), "vGPU cannot be the primary display",
				fmt.Sprintf("gpu[%d] is a vGPU (mdev %q): QEMU's x-vga needs the whole device. Set primary_gpu = false, or pass the whole GPU", i, g.Mdev.ValueString()))
		}
		if !g.PrimaryGPU.IsUnknown() && g.PrimaryGPU.ValueBool() {
			if primary >= 0 {
				diags.AddAttributeError(at.AtName("primary_gpu"), "More than one primary GPU",
					fmt.Sprintf("gpu[%d] and gpu[%d] both set primary_gpu: a VM has one primary display (x-vga). Keep it on one", primary, i))
			} else {
				primary = i
			}
		}
		if key := gpuDeviceKey(g); key != "" && g.Mdev.IsNull() {
			if j, dup := seen[key]; dup {
				attr := "pci_address"
				if !g.Mapping.IsNull() {
					attr = "mapping"
				}
				diags.AddAttributeError(at.AtName(attr), "GPU passed twice",
					fmt.Sprintf("gpu[%d] and gpu[%d] pass the same device (%s): remove one", j, i, strings.TrimPrefix(key, "device ")))
			} else {
				seen[key] = i
			}
		}
	}
	return diags
}

// known says whether v is set and known.
func known(v attr.Value) bool { return !v.IsNull() && !v.IsUnknown() }

// gpuDeviceKey names the device a gpu block passes, for duplicates: its
// mapping, or its address's device; "" when unknown.
func gpuDeviceKey(g passthroughGPUModel) string {
	switch {
	case !g.Mapping.IsNull() && !g.Mapping.IsUnknown():
		return "mapping " + g.Mapping.ValueString()
	case !g.PCIAddress.IsNull() && !g.PCIAddress.IsUnknown():
		return "device " + proxmox.PCIDevice(proxmox.NormalizePCIAddress(g.PCIAddress.ValueString()))
	}
	return ""
}

// gpusKnown says whether every gpu block is known, so the host checks can run.
func gpusKnown(gpus []passthroughGPUModel) bool {
	for _, g := range gpus {
		for _, v := range []interface{ IsUnknown() bool }{g.Mapping, g.PCIAddress, g.AllFunctions, g.Mdev, g.PCIE, g.PrimaryGPU, g.ROMBar} {
			if v.IsUnknown() {
				return false
			}
		}
	}
	return true
}
