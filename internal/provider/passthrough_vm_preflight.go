package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// This file holds gpu_passthrough_vm's preflight: the checks of the GPUs
// against what the node and the cluster have (PCI functions, IOMMU groups,
// mappings, mdev types, running guests, who the provider is). ModifyPlan
// runs it when the node and the GPUs are known and the provider is
// configured; Create and a GPU-changing Update run it again before any
// write, so a plan that could not know (or a GPU taken since) still fails
// before a VM exists. readPassthroughFacts reads; preflightGPUs decides,
// as a pure function of the facts.

const (
	nvidiaVendorID = "0x10de"
	// Display controller subclasses a GPU has: VGA (0x0300) and 3D (0x0302).
	pciClassVGA = "0x0300"
	pciClass3D  = "0x0302"
)

// passthroughFacts is what the preflight reads for one node.
type passthroughFacts struct {
	Node      string
	Identity  proxmox.Identity
	Functions []proxmox.PCIFunction
	Mappings  []proxmox.PCIMapping
	Guests    []proxmox.Guest
	// Mdev is the mdev types per function address, read for GPUs with mdev.
	Mdev map[string][]proxmox.MdevType
	// MappingUse says, per mapping a GPU names, whether the provider's
	// identity has Mapping.Use on it; read unless it is root@pam.
	MappingUse map[string]bool
}

// readPassthroughFacts reads the facts the preflight of gpus on node needs.
func readPassthroughFacts(ctx context.Context, client *proxmox.Client, node string, gpus []proxmox.GPU) (*passthroughFacts, error) {
	start := time.Now()
	facts := &passthroughFacts{Node: node, Identity: client.Identity(), Mdev: map[string][]proxmox.MdevType{}}
	var err error
	if facts.Functions, err = client.PCIFunctions(ctx, node); err != nil {
		return nil, fmt.Errorf("reading the PCI devices of node %s (/nodes/%s/hardware/pci): %w", node, node, err)
	}
	if facts.Mappings, err = client.PCIMappings(ctx); err != nil {
		return nil, fmt.Errorf("reading the cluster's PCI mappings (/cluster/mapping/pci): %w", err)
	}
	if facts.Guests, err = client.Guests(ctx); err != nil {
		return nil, fmt.Errorf("reading the cluster's VMs (/cluster/resources): %w", err)
	}
	for _, g := range gpus {
		if g.Mapping == "" || facts.Identity.IsRootPam() {
			continue
		}
		if facts.MappingUse == nil {
			facts.MappingUse = map[string]bool{}
		}
		perms, err := client.Permissions(ctx, "/mapping/pci/"+g.Mapping)
		if err != nil {
			return nil, fmt.Errorf("reading the provider's permissions on /mapping/pci/%s: %w", g.Mapping, err)
		}
		_, facts.MappingUse[g.Mapping] = perms["Mapping.Use"]
	}
	for _, g := range gpus {
		if g.Mdev == "" {
			continue
		}
		address := g.PCIAddress
		if g.Mapping != "" {
			e, ok := facts.mappingEntry(g.Mapping, node)
			if !ok {
				continue // the preflight reports the mapping
			}
			address = e.Path
		}
		address = primaryFunction(address)
		if _, done := facts.Mdev[address]; done {
			continue
		}
		if _, ok := facts.function(address); !ok {
			continue // the preflight reports the address
		}
		types, err := client.MdevTypes(ctx, node, address)
		if err != nil {
			return nil, fmt.Errorf("reading the vGPU (mdev) types of %s on node %s: %w", address, node, err)
		}
		facts.Mdev[address] = types
	}
	tflog.Debug(ctx, "read the Proxmox facts for the GPU preflight", map[string]any{
		"node": node, "functions": len(facts.Functions), "mappings": len(facts.Mappings), "guests": len(facts.Guests),
		"duration": time.Since(start).String(),
	})
	return facts, nil
}

// function is the PCI function at address ("0000:01:00.0") on the node.
func (f *passthroughFacts) function(address string) (proxmox.PCIFunction, bool) {
	for _, fn := range f.Functions {
		if strings.EqualFold(fn.Address, address) {
			return fn, true
		}
	}
	return proxmox.PCIFunction{}, false
}

// deviceFunctions are the functions an address passes: the one named, or
// every function of the device for "0000:01:00".
func (f *passthroughFacts) deviceFunctions(address string) []proxmox.PCIFunction {
	var out []proxmox.PCIFunction
	for _, fn := range f.Functions {
		if strings.EqualFold(fn.Address, address) || (!strings.Contains(address, ".") && strings.EqualFold(pciDevice(fn.Address), address)) {
			out = append(out, fn)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// mapping is the cluster mapping id.
func (f *passthroughFacts) mapping(id string) (proxmox.PCIMapping, bool) {
	for _, m := range f.Mappings {
		if m.ID == id {
			return m, true
		}
	}
	return proxmox.PCIMapping{}, false
}

// mappingEntry is mapping id's entry on node.
func (f *passthroughFacts) mappingEntry(id, node string) (proxmox.PCIMappingEntry, bool) {
	m, ok := f.mapping(id)
	if !ok {
		return proxmox.PCIMappingEntry{}, false
	}
	for _, e := range m.Entries {
		if e.Node == node {
			return e, true
		}
	}
	return proxmox.PCIMappingEntry{}, false
}

// primaryFunction is the function a GPU address means: itself, or function 0 of a device.
func primaryFunction(address string) string {
	if address == "" || strings.Contains(address, ".") {
		return address
	}
	return address + ".0"
}

// isNVIDIAGPU says whether fn is an NVIDIA display or 3D controller.
func isNVIDIAGPU(fn proxmox.PCIFunction) bool {
	class := strings.ToLower(fn.Class)
	return strings.EqualFold(fn.VendorID, nvidiaVendorID) && (strings.HasPrefix(class, pciClassVGA) || strings.HasPrefix(class, pciClass3D))
}

// describeFunction is "0000:01:00.1 (NVIDIA Corporation GA102 High Definition Audio Controller, class 0x040300)".
func describeFunction(fn proxmox.PCIFunction) string {
	name := strings.TrimSpace(fn.VendorName + " " + fn.DeviceName)
	if name == "" {
		name = fn.VendorID + ":" + fn.DeviceID
	}
	return fmt.Sprintf("%s (%s, class %s)", fn.Address, name, fn.Class)
}

// nvidiaGPUAddresses lists the node's NVIDIA GPU functions, for error messages.
func (f *passthroughFacts) nvidiaGPUAddresses() string {
	var out []string
	for _, fn := range f.Functions {
		if isNVIDIAGPU(fn) {
			out = append(out, fn.Address)
		}
	}
	if len(out) == 0 {
		return "it has none"
	}
	sort.Strings(out)
	return "it has " + strings.Join(out, ", ")
}

// preflightGPUs checks gpus (the VM's hostpci0..N) for VM vmid (0 when not
// created yet) on facts.Node; every error names its gpu[i] attribute.
func preflightGPUs(vmid int, gpus []proxmox.GPU, facts *passthroughFacts) diag.Diagnostics {
	var diags diag.Diagnostics
	node := facts.Node
	passed := map[string]bool{}     // every function the VM gets
	groupOf := map[int][]string{}   // IOMMU group -> functions the VM gets from it
	groupBy := map[int]path.Path{}  // IOMMU group -> the gpu attribute that brings it
	firstDevice := map[string]int{} // device -> gpu index that passes it
	for i, g := range gpus {
		at := path.Root("gpu").AtListIndex(i)
		var (
			attr      path.Path
			name      string
			functions []proxmox.PCIFunction
		)
		switch {
		case g.Mapping != "":
			attr, name = at.AtName("mapping"), fmt.Sprintf("gpu[%d].mapping %q", i, g.Mapping)
			if use, checked := facts.MappingUse[g.Mapping]; checked && !use {
				diags.AddAttributeError(attr, "No permission to use the PCI mapping", fmt.Sprintf("%s: the provider authenticates as %s, "+
					"which lacks Mapping.Use on /mapping/pci/%s, so Proxmox would refuse the VM's configuration. Grant it, e.g. "+
					"pveum acl modify /mapping/pci/%s --tokens '%s' --roles PVEMappingUser (or --users for a user)",
					name, facts.Identity, g.Mapping, g.Mapping, facts.Identity))
				continue
			}
			m, ok := facts.mapping(g.Mapping)
			if !ok {
				diags.AddAttributeError(attr, "PCI mapping not found", fmt.Sprintf("%s: the cluster has no PCI resource mapping of that ID (%s). "+
					"Create it under Datacenter → Resource Mappings, or use one gpu_inventory (source = \"proxmox\") lists as `mapping`", name, facts.mappingIDs()))
				continue
			}
			e, ok := facts.mappingEntry(g.Mapping, node)
			if !ok {
				diags.AddAttributeError(attr, "PCI mapping has no entry on this node", fmt.Sprintf("%s maps devices on %s, not on node %s: "+
					"use a mapping with an entry on %s, or add one to this mapping", name, mappingNodes(m), node, node))
				continue
			}
			if g.Mdev != "" && !m.Mdev {
				diags.AddAttributeError(attr, "PCI mapping not for vGPUs", fmt.Sprintf("%s is not marked for mediated devices, and gpu[%d] asks "+
					"for vGPU type %q: enable \"Use with mediated devices\" on the mapping, or pass the whole GPU (remove mdev)", name, i, g.Mdev))
				continue
			}
			functions = facts.deviceFunctions(e.Path)
			if len(functions) == 0 {
				diags.AddAttributeError(attr, "PCI mapping points at no device", fmt.Sprintf("%s's entry on node %s is %s, which the node does not "+
					"have (%s): fix the mapping's path", name, node, e.Path, facts.nvidiaGPUAddresses()))
				continue
			}
		default:
			attr, name = at.AtName("pci_address"), fmt.Sprintf("gpu[%d].pci_address %q", i, g.PCIAddress)
			if !facts.Identity.IsRootPam() {
				diags.AddAttributeError(attr, "Raw PCI address needs root@pam", fmt.Sprintf("%s: Proxmox lets only root@pam, logged in with "+
					"a password, pass a device by its raw address (qemu-server refuses others: \"only root can set 'hostpci%d' config for "+
					"non-mapped devices\"), and the provider authenticates as %s: use a mapping, or root@pam credentials (a cluster PCI "+
					"mapping of the device in gpu.mapping, which an API token with Mapping.Use may set; or a provider with proxmox.username "+
					"= \"root@pam\" and its password and no API token)", name, i, facts.Identity))
			}
			functions = facts.deviceFunctions(g.PCIAddress)
			if g.AllFunctions {
				functions = facts.deviceFunctions(pciDevice(g.PCIAddress))
			}
			if len(functions) == 0 {
				diags.AddAttributeError(attr, "No such PCI device", fmt.Sprintf("%s: node %s has no PCI device at that address (%s). "+
					"gpu_inventory with source = \"proxmox\" lists the node's NVIDIA GPUs", name, node, facts.nvidiaGPUAddresses()))
				continue
			}
		}
		gpu := functions[0]
		if g.PCIAddress != "" && strings.Contains(g.PCIAddress, ".") {
			gpu, _ = facts.function(g.PCIAddress)
		}
		if !isNVIDIAGPU(gpu) {
			diags.AddAttributeError(attr, "Not an NVIDIA GPU", fmt.Sprintf("%s is %s, not an NVIDIA display or 3D controller (vendor %s, "+
				"class %s or %s). Pass the GPU's own function (function 0: %s), %s", name, describeFunction(gpu), nvidiaVendorID,
				pciClassVGA, pciClass3D, primaryFunction(pciDevice(gpu.Address)), facts.nvidiaGPUAddresses()))
			continue
		}
		device := pciDevice(gpu.Address)
		if j, dup := firstDevice[device]; dup && g.Mdev == "" {
			diags.AddAttributeError(attr, "GPU passed twice", fmt.Sprintf("%s passes %s, which gpu[%d] passes already: remove one", name, device, j))
			continue
		}
		firstDevice[device] = i

		if g.Mdev != "" {
			diags.Append(checkMdev(attr.ParentPath().AtName("mdev"), i, g.Mdev, gpu, facts)...)
			continue // vGPU instances share the device: no IOMMU group or exclusive use to check
		}
		if holder, line, ok := facts.heldBy(node, vmid, functions); ok {
			diags.AddAttributeError(attr, "GPU in use by another VM", fmt.Sprintf("%s: %s is passed through to VM %d (%s) on node %s "+
				"(%s), which is running; Proxmox would fail this VM's start (\"PCI device '%s' already in use by VMID '%d'\"). Stop that VM or "+
				"remove the GPU from it, or pick a free GPU (gpu_inventory with source = \"proxmox\" and free_only = true)",
				name, device, holder.VMID, holder.Name, holder.Node, line, gpu.Address, holder.VMID))
			continue
		}
		for _, fn := range functions {
			passed[strings.ToLower(fn.Address)] = true
			if fn.IOMMUGroup < 0 {
				diags.AddAttributeError(attr, "IOMMU is off", fmt.Sprintf("%s: node %s reports no IOMMU group for %s, so the IOMMU is off "+
					"and nothing can be passed through. Enable it in the firmware (VT-d / AMD-Vi) and on the kernel command line "+
					"(intel_iommu=on or amd_iommu=on, iommu=pt), then reboot the node", name, node, fn.Address))
				break
			}
			groupOf[fn.IOMMUGroup] = append(groupOf[fn.IOMMUGroup], fn.Address)
			if _, ok := groupBy[fn.IOMMUGroup]; !ok {
				groupBy[fn.IOMMUGroup] = attr
			}
		}
	}
	groups := make([]int, 0, len(groupOf))
	for g := range groupOf {
		groups = append(groups, g)
	}
	sort.Ints(groups)
	for _, group := range groups {
		var left []string
		for _, fn := range facts.Functions {
			if fn.IOMMUGroup == group && !passed[strings.ToLower(fn.Address)] {
				left = append(left, describeFunction(fn))
			}
		}
		if len(left) == 0 {
			continue
		}
		attr := groupBy[group]
		diags.AddAttributeError(attr, "IOMMU group not passed whole", fmt.Sprintf("%s: IOMMU group %d of node %s holds %s, which this VM "+
			"would get, and also %s, which it would not. A VM must get every device of an IOMMU group or none: the host loses the others "+
			"while the VM runs, unpredictably. Pass them along (all_functions = true passes a GPU's audio function; another gpu block or "+
			"mapping for the rest), or move the card to a slot with its own IOMMU group",
			attr.String(), group, node, strings.Join(groupOf[group], ", "), strings.Join(left, ", ")))
	}
	return diags
}

// checkMdev checks that the vGPU type exists on gpu with instances left.
func checkMdev(attr path.Path, i int, mdev string, gpu proxmox.PCIFunction, facts *passthroughFacts) diag.Diagnostics {
	var diags diag.Diagnostics
	types := facts.Mdev[strings.ToLower(gpu.Address)]
	if types == nil {
		types = facts.Mdev[gpu.Address]
	}
	var offered []string
	for _, t := range types {
		offered = append(offered, fmt.Sprintf("%s (%s, %d left)", t.Type, t.Name, t.Available))
		if t.Type != mdev {
			continue
		}
		if t.Available < 1 {
			diags.AddAttributeError(attr, "vGPU type has no instances left", fmt.Sprintf("gpu[%d].mdev %q: %s has no instance of it left "+
				"(every one is in use), so Proxmox would fail the VM's start. Pick a type with instances left, or free one", i, mdev, gpu.Address))
		}
		return diags
	}
	list := "it offers none: enable NVIDIA vGPU (the vGPU host driver and SR-IOV) on the node"
	if len(offered) > 0 {
		list = "it offers " + strings.Join(offered, ", ")
	}
	diags.AddAttributeError(attr, "No such vGPU type", fmt.Sprintf("gpu[%d].mdev %q: %s on node %s has no vGPU type of that name; %s",
		i, mdev, gpu.Address, facts.Node, list))
	return diags
}

// heldBy finds a running VM other than vmid on node that has one of
// functions passed through whole (a vGPU instance holds no device).
func (f *passthroughFacts) heldBy(node string, vmid int, functions []proxmox.PCIFunction) (proxmox.Guest, string, bool) {
	for _, g := range f.Guests {
		if g.Node != node || g.VMID == vmid || g.Status != "running" {
			continue
		}
		indexes := make([]int, 0, len(g.HostPCI))
		for i := range g.HostPCI {
			indexes = append(indexes, i)
		}
		sort.Ints(indexes)
		for _, i := range indexes {
			value := g.HostPCI[i]
			if strings.Contains(value, "mdev=") {
				continue
			}
			mapping, address := hostPCIDevice(value)
			if mapping != "" {
				e, ok := f.mappingEntry(mapping, node)
				if !ok {
					continue
				}
				address = strings.ToLower(e.Path)
			}
			for _, fn := range functions {
				a := strings.ToLower(fn.Address)
				if a == address || (!strings.Contains(address, ".") && pciDevice(a) == address) {
					return g, fmt.Sprintf("hostpci%d: %s", i, value), true
				}
			}
		}
	}
	return proxmox.Guest{}, "", false
}

func (f *passthroughFacts) mappingIDs() string {
	if len(f.Mappings) == 0 {
		return "it has none"
	}
	ids := make([]string, len(f.Mappings))
	for i, m := range f.Mappings {
		ids[i] = m.ID
	}
	sort.Strings(ids)
	return "it has " + strings.Join(ids, ", ")
}

func mappingNodes(m proxmox.PCIMapping) string {
	var nodes []string
	for _, e := range m.Entries {
		nodes = append(nodes, e.Node+" ("+e.Path+")")
	}
	if len(nodes) == 0 {
		return "no node"
	}
	return strings.Join(nodes, ", ")
}
