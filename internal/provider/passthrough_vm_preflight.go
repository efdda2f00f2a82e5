package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// This file turns gpu_passthrough_vm's preflight into diagnostics. The
// rules (PCI functions, IOMMU groups, mappings, mdev types, running
// guests, who the client is) and the facts they read are the backend's:
// proxmox.ReadNodeFacts and proxmox.Preflight. Here each finding becomes a
// diagnostic on the attribute its field names, with what to change in the
// configuration. ModifyPlan runs it when the node and the GPUs are known
// and the provider is configured; Create and a GPU-changing Update run it
// again before any write, so a plan that could not know (or a GPU taken
// since) still fails before a VM exists.

// preflightVM is the VM a preflight is for: on node, existing as vmid, or
// to be created (vmid 0) as newVMID (0: the next free one).
type preflightVM struct {
	node          string
	vmid, newVMID int
	// planned marks a plan's preflight, of a VM to be created as name or
	// of one to be updated. Terraform plans the configuration before every
	// destroy, and there a create is planned for each resource not in the
	// state, as for a new one or a tainted one (whose VM the apply deletes
	// before creating the new one): the plan cannot tell them apart. So in
	// a plan a conflict with another VM (a GPU it holds, its VM ID, the
	// vGPU instances it uses) is a warning, which the apply's create or
	// update turns into an error before any write, and a destroy goes
	// ahead; and a VM called name on the node is the resource's own
	// predecessor, never a conflict.
	planned bool
	name    string
	// starting says the VM is to run after the apply. What only a start
	// refuses (a device another running VM holds, a pool with none free,
	// vGPU instances used up) is no finding for a VM that stays stopped.
	// A pool with none free is an error even in a plan for a VM that does
	// not exist yet: see preflightDiagnostics.
	starting bool
}

// preflight reads the facts of the VM's node and checks its VM ID and
// gpus against them.
func preflight(ctx context.Context, client *proxmox.Client, vm preflightVM, gpus []proxmox.GPU) diag.Diagnostics {
	var diags diag.Diagnostics
	if len(gpus) == 0 {
		return diags
	}
	start := time.Now()
	facts, err := client.ReadNodeFacts(ctx, vm.node, gpus)
	if err != nil {
		diags.AddAttributeError(path.Root("node"), "checking the GPUs against Proxmox VE", err.Error())
		return diags
	}
	tflog.Debug(ctx, "read the Proxmox facts for the GPU preflight", map[string]any{
		"node": vm.node, "functions": len(facts.Functions), "mappings": len(facts.Mappings), "guests": len(facts.Guests),
		"duration": time.Since(start).String(),
	})
	return preflightDiagnostics(vm, gpus, facts)
}

// preflightDiagnostics is the backend's preflight of gpus for vm, as
// diagnostics on the attributes at fault.
func preflightDiagnostics(vm preflightVM, gpus []proxmox.GPU, facts *proxmox.NodeFacts) diag.Diagnostics {
	var diags diag.Diagnostics
	target := proxmox.PreflightVM{Node: vm.node, VMID: vm.vmid, NewVMID: vm.newVMID}
	if vm.planned && vm.vmid == 0 {
		target.OwnName = vm.name
	}
	for _, f := range proxmox.Preflight(target, gpus, facts) {
		if !vm.starting && startFinding(f.Kind) {
			continue
		}
		at := fieldPath(f.Field)
		summary, detail := describeFinding(f, vm, gpus, facts)
		if vm.planned && f.Kind == proxmox.FindingPoolExhausted && !exists(target, facts) {
			// The rule: a new VM to be started on a pool whose
			// every device runs elsewhere is refused at plan, naming the
			// holders. Terraform plans the configuration before a destroy
			// too (its pre-destroy refresh), so the detail says how to
			// destroy. A VM that exists already (an update, or the tainted
			// leftover of a failed start the plan replaces) gets the
			// warning of any conflict below: refusing it at plan would stop
			// the destroy of a configuration that only has VMs, and the
			// apply still refuses the start before any write.
			diags.AddAttributeError(at, summary, detail+"\n\n"+poolDestroyNote)
			continue
		}
		if vm.planned && f.Conflict() {
			diags.AddAttributeWarning(at, summary, detail+"\n\nThe plan goes ahead, as that VM may change before the apply (and "+
				"Terraform makes this plan before a destroy too); the apply stops before changing anything while this still holds.")
			continue
		}
		diags.AddAttributeError(at, summary, detail)
	}
	return diags
}

// exists says whether the VM a preflight is for exists already: it has a
// VM ID (from the state), or a VM of its name on the node is its own
// predecessor, by the backend's own-VM rule (proxmox.PreflightVM.Own).
func exists(target proxmox.PreflightVM, facts *proxmox.NodeFacts) bool {
	return target.VMID != 0 || slices.ContainsFunc(facts.Guests, target.Own)
}

// poolDestroyNote says how to destroy while a plan refuses a VM on a full pool.
const poolDestroyNote = "terraform destroy plans this configuration first and stops here as well while the pool is full: run it " +
	"with -refresh=false, or remove this resource from the configuration first."

// startFinding says whether a finding is one only a start refuses: PVE
// takes the configuration and fails the VM's start.
func startFinding(kind proxmox.FindingKind) bool {
	switch kind {
	case proxmox.FindingGPUHeld, proxmox.FindingPoolExhausted, proxmox.FindingMdevTypeUsedUp:
		return true
	}
	return false
}

// describeFinding is the summary and detail of a finding: the attribute
// and its value, what Proxmox would do, and what to change.
func describeFinding(f proxmox.Finding, vm preflightVM, gpus []proxmox.GPU, facts *proxmox.NodeFacts) (string, string) {
	i := f.Field.GPU
	var g proxmox.GPU
	if i < len(gpus) {
		g = gpus[i]
	}
	name := fmt.Sprintf("gpu[%d].pci_address %q", i, g.PCIAddress)
	if g.Mapping != "" {
		name = fmt.Sprintf("gpu[%d].mapping %q", i, g.Mapping)
	}
	node := facts.Node
	switch f.Kind {
	case proxmox.FindingMappingNoUse:
		return "No permission to use the PCI mapping", fmt.Sprintf("%s: the provider authenticates as %s, which lacks Mapping.Use on "+
			"/mapping/pci/%s, so Proxmox would refuse the VM's configuration. Grant it, e.g. %s", name, facts.Identity, g.Mapping,
			proxmox.GrantCommand(facts.Identity, "/mapping/pci/"+g.Mapping, "PVEMappingUser"))
	case proxmox.FindingMappingNotFound:
		return "PCI mapping not found", fmt.Sprintf("%s: the cluster has no PCI resource mapping of that ID (%s). Make it with a "+
			"gpu_pci_mapping resource (or under Datacenter → Resource Mappings), or use one gpu_inventory (source = \"proxmox\") lists as "+
			"`mapping`. When a gpu_pci_mapping of this configuration makes it, set mapping = gpu_pci_mapping.<name>.id: its id is "+
			"unknown until the mapping exists, so this plan waits for it instead of looking now", name, facts.MappingIDs())
	case proxmox.FindingMappingNotOnNode:
		return "PCI mapping has no entry on this node", fmt.Sprintf("%s maps devices on %s, not on node %s: use a mapping with an entry "+
			"on %s, or add one to this mapping", name, f.Mapping.Nodes(), node, node)
	case proxmox.FindingMappingNotMdev:
		return "PCI mapping not for vGPUs", fmt.Sprintf("%s is not marked for mediated devices, and gpu[%d] asks for vGPU type %q: enable "+
			"\"Use with mediated devices\" on the mapping, or pass the whole GPU (remove mdev)", name, i, g.Mdev)
	case proxmox.FindingMappingNoDevice:
		return "PCI mapping points at no device", fmt.Sprintf("%s's entry on node %s is %s, which the node does not have (%s): fix the "+
			"mapping's path", name, node, f.Path, facts.NVIDIAGPUs())
	case proxmox.FindingRawAddressNeedsRoot:
		return "Raw PCI address needs root@pam", fmt.Sprintf("%s: Proxmox lets only root@pam, logged in with a password, pass a device by "+
			"its raw address (qemu-server refuses others: \"only root can set 'hostpci%d' config for non-mapped devices\"), and the "+
			"provider authenticates as %s: use a mapping, or root@pam credentials (a cluster PCI mapping of the device in gpu.mapping, "+
			"which an API token with Mapping.Use may set; or a provider with proxmox.username = \"root@pam\" and its password and no API "+
			"token)", name, i, facts.Identity)
	case proxmox.FindingNoSuchDevice:
		return "No such PCI device", fmt.Sprintf("%s: node %s has no PCI device at that address (%s). gpu_inventory with source = "+
			"\"proxmox\" lists the node's NVIDIA GPUs", name, node, facts.NVIDIAGPUs())
	case proxmox.FindingNotNVIDIAGPU:
		return "Not an NVIDIA GPU", fmt.Sprintf("%s is %s, not an NVIDIA display or 3D controller (vendor %s, class %s or %s). Pass the "+
			"GPU's own function (function 0: %s), %s", name, f.Function.Describe(), proxmox.NVIDIAVendorID, proxmox.PCIClassVGA,
			proxmox.PCIClass3D, proxmox.PrimaryFunction(proxmox.PCIDevice(f.Function.Address)), facts.NVIDIAGPUs())
	case proxmox.FindingPassedTwice:
		return "GPU passed twice", fmt.Sprintf("%s passes %s, which gpu[%d] passes already: remove one", name, f.Device, f.Other)
	case proxmox.FindingGPUHeld:
		h := f.Holder.Guest
		return "GPU in use by another VM", fmt.Sprintf("%s: %s is passed through to VM %d (%s) on node %s (%s), which is running; "+
			"Proxmox would fail this VM's start (\"PCI device '%s' already in use by VMID '%d'\"). Stop that VM or remove the GPU from "+
			"it, or pick a free GPU (gpu_inventory with source = \"proxmox\" and free_only = true)",
			name, f.Device, h.VMID, h.Name, h.Node, f.Holder.Line, f.Function.Address, h.VMID)
	case proxmox.FindingIOMMUOff:
		return "IOMMU is off", fmt.Sprintf("%s: node %s reports no IOMMU group for %s, so the IOMMU is off and nothing can be passed "+
			"through. Enable it in the firmware (VT-d / AMD-Vi) and on the kernel command line (intel_iommu=on or amd_iommu=on, "+
			"iommu=pt), then reboot the node", name, node, f.Function.Address)
	case proxmox.FindingGroupNotWhole:
		left := make([]string, len(f.Left))
		for j, fn := range f.Left {
			left[j] = fn.Describe()
		}
		return "IOMMU group not passed whole", fmt.Sprintf("%s: IOMMU group %d of node %s holds %s, which this VM would get, and also %s, "+
			"which it would not. A VM must get every device of an IOMMU group or none: the host loses the others while the VM runs, "+
			"unpredictably. Pass them along (all_functions = true passes a GPU's audio function; another gpu block or mapping for the "+
			"rest), or move the card to a slot with its own IOMMU group",
			fieldPath(f.Field), f.Group, node, strings.Join(f.Passed, ", "), strings.Join(left, ", "))
	case proxmox.FindingNoSuchMdevType:
		list := "it offers none: enable NVIDIA vGPU (the vGPU host driver and SR-IOV) on the node"
		if len(f.Offered) > 0 {
			list = "it offers " + proxmox.DescribeMdevTypes(f.Offered)
		}
		return "No such vGPU type", fmt.Sprintf("gpu[%d].mdev %q: %s on node %s has no vGPU type of that name; %s",
			i, g.Mdev, f.Function.Address, node, list)
	case proxmox.FindingMdevTypeUsedUp:
		return "vGPU type has no instances left", fmt.Sprintf("gpu[%d].mdev %q: %s has no instance of it left (every one is in use), so "+
			"Proxmox would fail the VM's start. Pick a type with instances left, or free one", i, g.Mdev, f.Function.Address)
	case proxmox.FindingPoolExhausted:
		return "GPU pool has no free device", describePoolExhausted(name, i, node, len(f.Mapping.EntriesOn(node)), f.Holders)
	case proxmox.FindingMappingInvalid:
		return "PCI mapping does not match the hardware", fmt.Sprintf("%s: its entry %s on node %s does not match the node's "+
			"hardware: %s. Proxmox checks every entry of the mapping on the node when a VM starts and refuses the start (\"PCI "+
			"device mapping invalid (hardware probably changed)\"). Fix the mapping's entry (a gpu_pci_mapping's plan shows the "+
			"change from the hardware; or Datacenter → Resource Mappings), or remove it from the mapping",
			name, f.Path, node, f.Problem)
	case proxmox.FindingVMIDInUse:
		h := f.Holder.Guest
		return "VM ID in use", fmt.Sprintf("vmid %d is VM %q on node %s already: to manage it, import it (terraform import <address> "+
			"%s/%d); else pick a free vmid, or leave vmid unset for the next free one", vm.newVMID, h.Name, h.Node, h.Node, h.VMID)
	}
	return "Proxmox VE would refuse the VM", fmt.Sprintf("%s: preflight finding %d", name, f.Kind)
}
