package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// This file holds gpu_inventory's pci_mappings (source "proxmox"): the
// cluster's PCI mappings as GPU pools, each entry on the nodes read with
// whether the node's hardware still matches it (the backend's
// CheckMappingEntry, PVE's assert_valid), which running VM holds it (the
// backend's NodeFacts.Pool: for a pool, the device each VM was given,
// from its QEMU monitor) and, for mdev mappings, the vGPU instances left.

// inventoryPCIMappingModel is one element of gpu_inventory.pci_mappings.
type inventoryPCIMappingModel struct {
	ID                   string                          `tfsdk:"id"`
	Description          string                          `tfsdk:"description"`
	Mdev                 bool                            `tfsdk:"mdev"`
	LiveMigrationCapable bool                            `tfsdk:"live_migration_capable"`
	Entries              []inventoryPCIMappingEntryModel `tfsdk:"entries"`
	Nodes                []inventoryPCIMappingNodeModel  `tfsdk:"nodes"`
}

// inventoryPCIMappingEntryModel is one entry (one device of the pool) of a mapping.
type inventoryPCIMappingEntryModel struct {
	Node      string                   `tfsdk:"node"`
	Path      string                   `tfsdk:"path"`
	Product   string                   `tfsdk:"product"`
	Valid     bool                     `tfsdk:"valid"`
	Problem   *string                  `tfsdk:"problem"`
	InUse     bool                     `tfsdk:"in_use"`
	VMID      *int64                   `tfsdk:"vm_id"`
	VMName    *string                  `tfsdk:"vm_name"`
	MdevTypes []inventoryMdevTypeModel `tfsdk:"mdev_types"`
}

// inventoryPCIMappingNodeModel counts a mapping's devices on one node.
type inventoryPCIMappingNodeModel struct {
	Node    string `tfsdk:"node"`
	Devices int64  `tfsdk:"devices"`
	Free    int64  `tfsdk:"free"`
}

var inventoryPCIMappingEntryObjectType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"node": types.StringType, "path": types.StringType, "product": types.StringType, "valid": types.BoolType,
	"problem": types.StringType, "in_use": types.BoolType, "vm_id": types.Int64Type, "vm_name": types.StringType,
	"mdev_types": types.ListType{ElemType: inventoryMdevTypeObjectType},
}}

var inventoryPCIMappingNodeObjectType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"node": types.StringType, "devices": types.Int64Type, "free": types.Int64Type,
}}

func inventoryPCIMappingObjectType() types.ObjectType {
	return types.ObjectType{AttrTypes: map[string]attr.Type{
		"id": types.StringType, "description": types.StringType, "mdev": types.BoolType, "live_migration_capable": types.BoolType,
		"entries": types.ListType{ElemType: inventoryPCIMappingEntryObjectType},
		"nodes":   types.ListType{ElemType: inventoryPCIMappingNodeObjectType},
	}}
}

// inventoryPCIMappingsAttribute is the schema of pci_mappings.
func inventoryPCIMappingsAttribute() schema.Attribute {
	str := func(d string) schema.Attribute { return schema.StringAttribute{Computed: true, MarkdownDescription: d} }
	boolean := func(d string) schema.Attribute { return schema.BoolAttribute{Computed: true, MarkdownDescription: d} }
	integer := func(d string) schema.Attribute { return schema.Int64Attribute{Computed: true, MarkdownDescription: d} }
	return schema.ListNestedAttribute{
		Computed: true,
		MarkdownDescription: "Source `proxmox`: the cluster's PCI resource mappings (`/cluster/mapping/pci`), sorted by ID, with their " +
			"entries on the nodes read (`filter.nodes`, or every online node; `filter.product` and `filter.free_only` apply to " +
			"`pci_devices` only). A mapping with several entries on a node is a GPU pool: a VM using it is given the first entry no " +
			"running VM holds when it starts. Null for the other sources.",
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"id":                     str("Mapping ID, a `gpu` block's `mapping`."),
			"description":            str("The mapping's description."),
			"mdev":                   boolean("Whether the mapping is for mediated devices (vGPU): its VMs get vGPU instances, not whole devices."),
			"live_migration_capable": boolean("Whether the mapping is marked as capable of live migration."),
			"entries": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The mapping's entries on the nodes read, by node, in the mapping's order (the order Proxmox tries them).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"node":    str("Proxmox node."),
					"path":    str("Host PCI path of the entry, e.g. `0000:41:00` (every function) or `0000:41:00.0`."),
					"product": str("Device name of the entry's first function from the node's PCI database; empty when the node has no such device."),
					"valid": boolean("Whether the node's hardware matches the entry (device and subsystem IDs, IOMMU group), as Proxmox " +
						"checks every entry of the mapping when a VM using it starts."),
					"problem": str("Why the entry does not match, in Proxmox's words; null when `valid`."),
					"in_use":  boolean("Whether a running VM has the device passed through whole, so no other VM can be given it."),
					"vm_id":   integer("The running VM holding the device; null when free."),
					"vm_name": str("Name of that VM; null when free."),
					"mdev_types": schema.ListNestedAttribute{
						Computed: true,
						MarkdownDescription: "For an `mdev` mapping: the vGPU types the device offers, with the instances left (fewer as " +
							"vGPU VMs start); empty otherwise.",
						NestedObject: schema.NestedAttributeObject{Attributes: inventoryMdevTypeAttributes()},
					},
				}},
			},
			"nodes": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Per node read with entries of the mapping, sorted by node: how many devices it maps there and how many are free.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"node":    str("Proxmox node."),
					"devices": integer("Entries of the mapping on the node."),
					"free":    integer("Entries that are `valid` and not `in_use`: devices a VM starting now could be given."),
				}},
			},
		}},
	}
}

// inventoryMdevTypeAttributes are the attributes of one vGPU type.
func inventoryMdevTypeAttributes() map[string]schema.Attribute {
	str := func(d string) schema.Attribute { return schema.StringAttribute{Computed: true, MarkdownDescription: d} }
	return map[string]schema.Attribute{
		"type":        str("Type, a `gpu` block's `mdev`, e.g. `nvidia-1155`."),
		"name":        str("Name, e.g. `NVIDIA L40S-4Q`."),
		"description": str("Description (framebuffer, heads, resolution)."),
		"available":   schema.Int64Attribute{Computed: true, MarkdownDescription: "Instances left."},
	}
}

// mappingNodeFacts are what pci_mappings reads of one node: its facts
// (functions, the cluster's mappings, its guests with the devices each
// running guest on a pool was given) and the mdev types per function.
type mappingNodeFacts struct {
	facts *proxmox.NodeFacts
	mdev  map[string][]proxmox.MdevType
}

// inventoryPCIMappings is pci_mappings from the facts of each node read
// (by node name).
func inventoryPCIMappings(mappings []proxmox.PCIMapping, nodes map[string]mappingNodeFacts) []inventoryPCIMappingModel {
	out := make([]inventoryPCIMappingModel, 0, len(mappings))
	for _, m := range mappings {
		model := inventoryPCIMappingModel{
			ID: m.ID, Description: m.Description, Mdev: m.Mdev, LiveMigrationCapable: m.LiveMigrationCapable,
			Entries: []inventoryPCIMappingEntryModel{}, Nodes: []inventoryPCIMappingNodeModel{},
		}
		for _, node := range slices.Sorted(maps.Keys(nodes)) {
			n := nodes[node]
			pool := n.facts.Pool(m.ID, node)
			if len(pool) == 0 {
				continue
			}
			count := inventoryPCIMappingNodeModel{Node: node, Devices: int64(len(pool))}
			for _, d := range pool {
				e := mappingEntryModel(m, node, d, n)
				if !m.Mdev {
					e.MdevTypes = []inventoryMdevTypeModel{}
				}
				if e.Valid && !e.InUse {
					count.Free++
				}
				model.Entries = append(model.Entries, e)
			}
			model.Nodes = append(model.Nodes, count)
		}
		out = append(out, model)
	}
	return out
}

// mappingEntryModel is one device of a pool on node as pci_mappings lists it.
func mappingEntryModel(m proxmox.PCIMapping, node string, d proxmox.PoolDevice, n mappingNodeFacts) inventoryPCIMappingEntryModel {
	e := inventoryPCIMappingEntryModel{Node: node, Path: d.Entry.Path, Valid: true, MdevTypes: []inventoryMdevTypeModel{}}
	fns := n.facts.DeviceFunctions(d.Entry.Path)
	if len(fns) > 0 {
		e.Product = fns[0].DeviceName
		e.MdevTypes = mdevTypeModels(n.mdev[proxmox.NormalizePCIAddress(fns[0].Address)])
	}
	if problem := m.Check(d.Entry, n.facts.Functions); problem != "" {
		e.Valid, e.Problem = false, &problem
	}
	if d.Holder != nil {
		id, name := int64(d.Holder.Guest.VMID), d.Holder.Guest.Name
		e.InUse, e.VMID, e.VMName = true, &id, &name
	}
	return e
}

// readMappingNode reads what pci_mappings needs of node beyond its PCI
// functions (read already): the devices each running VM on a pool there
// was given, and the mdev types of the first function of each entry of an
// mdev mapping there.
func readMappingNode(ctx context.Context, client *proxmox.Client, node string, functions []proxmox.PCIFunction,
	mappings []proxmox.PCIMapping, guests []proxmox.Guest) (mappingNodeFacts, error) {
	facts := &proxmox.NodeFacts{Node: node, Functions: functions, Mappings: mappings, Guests: slices.Clone(guests)}
	if err := client.ReadHostDevices(ctx, facts); err != nil {
		return mappingNodeFacts{}, fmt.Errorf("reading which pool devices the VMs on node %s were given: %w", node, err)
	}
	out := mappingNodeFacts{facts: facts, mdev: map[string][]proxmox.MdevType{}}
	for _, m := range mappings {
		if !m.Mdev {
			continue
		}
		for _, e := range m.EntriesOn(node) {
			fns := facts.DeviceFunctions(e.Path)
			if len(fns) == 0 || !fns[0].MdevCapable {
				continue
			}
			if _, err := out.mdevTypes(ctx, client, fns[0]); err != nil {
				return mappingNodeFacts{}, err
			}
		}
	}
	return out, nil
}

// mdevTypes are the mdev types of fn on the node: read from Proxmox the
// first time pci_devices or pci_mappings asks, then kept in n.mdev.
func (n mappingNodeFacts) mdevTypes(ctx context.Context, client *proxmox.Client, fn proxmox.PCIFunction) ([]proxmox.MdevType, error) {
	address := proxmox.NormalizePCIAddress(fn.Address)
	if types, done := n.mdev[address]; done {
		return types, nil
	}
	types, err := client.MdevTypes(ctx, n.facts.Node, fn.Address)
	if err != nil {
		return nil, err
	}
	n.mdev[address] = types
	return types, nil
}

// mdevTypeModels are mdev types as gpu_inventory lists them.
func mdevTypeModels(types []proxmox.MdevType) []inventoryMdevTypeModel {
	out := make([]inventoryMdevTypeModel, 0, len(types))
	for _, t := range types {
		out = append(out, inventoryMdevTypeModel{Type: t.Type, Name: t.Name, Description: t.Description, Available: int64(t.Available)})
	}
	return out
}
