package provider

import (
	"context"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// setFromLive sets m from the mapping as PVE has it: its settings and
// entries, each with its device's product and the running VM holding it,
// read from the entry's node. An entry the node's hardware no longer
// matches (PCIMapping.Check: PVE's assert_valid with the mapping, as
// qemu-server calls it before a VM's start) is a warning;
// the next plan resolves the configuration against the hardware and shows
// the change. An imported mapping (neither select nor device in m) gets
// device blocks.
func (r *PCIMappingResource) setFromLive(ctx context.Context, client *proxmox.Client, m *pciMappingModel, live proxmox.PCIMapping, diags *diag.Diagnostics) {
	m.ID, m.Name = types.StringValue(live.ID), types.StringValue(live.ID)
	m.Description = types.StringNull()
	if live.Description != "" {
		m.Description = types.StringValue(live.Description)
	}
	m.Mdev, m.LiveMigrationCapable = types.BoolValue(live.Mdev), types.BoolValue(live.LiveMigrationCapable)
	facts := holderFacts(ctx, client, live)
	factsOf := func(node string) *proxmox.NodeFacts { return facts[node] }
	entries := make([]resolvedEntry, len(live.Entries))
	for i, e := range live.Entries {
		entries[i] = resolvedEntry{PCIMappingEntry: e}
		f := factsOf(e.Node)
		if f == nil {
			continue
		}
		fns := functionsOf(f.Functions, e.Path)
		if len(fns) > 0 {
			entries[i].product = functionAt(fns, proxmox.PrimaryFunction(firstPath(e.Path))).DeviceName
		}
		if problem := live.Check(e, f.Functions); problem != "" {
			diags.AddWarning("PCI mapping no longer matches the hardware", "Mapping "+live.ID+"'s entry on node "+e.Node+" ("+e.Path+
				"): "+problem+". PVE refuses to start a VM on it; the plan resolves the configuration against the hardware again.")
		}
	}
	list, d := entryValues(entries, func(e proxmox.PCIMappingEntry) types.Int64 {
		return holderOf(factsOf(e.Node), live.ID, e)
	})
	diags.Append(d...)
	m.Entries = list
	if len(m.Select) == 0 && len(m.Device) == 0 {
		for _, e := range live.Entries {
			m.Device = append(m.Device, pciMappingDeviceModel{Node: types.StringValue(e.Node), Address: types.StringValue(e.Path)})
		}
	}
}

// holderFacts are, per node of live's entries, what tells each entry's
// product and holder: the node's PCI functions, the cluster's mappings and
// VMs (each read once for all the nodes), and the devices the running VMs
// on a pool there got (the backend's ReadHostDevices, from the QEMU
// monitor). A node that cannot be read is nil: its entries have no product
// and no holder.
func holderFacts(ctx context.Context, client *proxmox.Client, live proxmox.PCIMapping) map[string]*proxmox.NodeFacts {
	out := map[string]*proxmox.NodeFacts{}
	if len(live.Entries) == 0 {
		return out
	}
	mappings, err := client.PCIMappings(ctx)
	var guests []proxmox.Guest
	if err == nil {
		guests, err = client.Guests(ctx)
	}
	if err != nil {
		tflog.Debug(ctx, "could not read the cluster's mappings and VMs: the entries have no product or holder", map[string]any{"error": err.Error()})
		return out
	}
	for _, e := range live.Entries {
		if _, done := out[e.Node]; done {
			continue
		}
		f := &proxmox.NodeFacts{Node: e.Node, Identity: client.Identity(), Mappings: mappings, Guests: slices.Clone(guests)}
		if f.Functions, err = client.PCIFunctions(ctx, e.Node); err == nil {
			err = client.ReadHostDevices(ctx, f)
		}
		if err != nil {
			tflog.Debug(ctx, "could not read a node of a PCI mapping: its entries have no product or holder", map[string]any{"node": e.Node, "error": err.Error()})
			f = nil
		}
		out[e.Node] = f
	}
	return out
}

// holderOf is the VM ID of the running VM holding e's device (through
// this mapping, another or its address: the backend's pool view, which
// knows from the QEMU monitor which entry of a pool a VM got); null when
// none does, or f is nil.
func holderOf(f *proxmox.NodeFacts, id string, e proxmox.PCIMappingEntry) types.Int64 {
	if f == nil {
		return types.Int64Null()
	}
	for _, d := range f.Pool(id, e.Node) {
		if d.Entry.Path == e.Path && d.Holder != nil {
			return types.Int64Value(int64(d.Holder.Guest.VMID))
		}
	}
	return types.Int64Null()
}

// firstPath is the first address of a ';' list.
func firstPath(p string) string {
	for i := range len(p) {
		if p[i] == ';' {
			return p[:i]
		}
	}
	return p
}

// unknownHoldersAsNull is a planned entries list with its unknown holders
// null, for a state saved without reading the mapping back.
func unknownHoldersAsNull(ctx context.Context, list types.List) types.List {
	if list.IsUnknown() {
		return types.ListNull(pciMappingEntryObjectType)
	}
	return withHolders(ctx, list, func(vm types.Int64) types.Int64 {
		if vm.IsUnknown() {
			return types.Int64Null()
		}
		return vm
	})
}

// holdersUnknown is a state's entries list with every holder unknown, for
// a plan that changes the mapping: the apply reads the holders again, and a
// VM may start or stop meanwhile.
func holdersUnknown(ctx context.Context, list types.List) types.List {
	if list.IsNull() || list.IsUnknown() {
		return list
	}
	return withHolders(ctx, list, func(types.Int64) types.Int64 { return types.Int64Unknown() })
}

// withHolders is list with each element's vm replaced by holder(vm); list
// itself when it is not a list of entries.
func withHolders(ctx context.Context, list types.List, holder func(types.Int64) types.Int64) types.List {
	values := make([]attr.Value, 0, len(list.Elements()))
	for _, v := range list.Elements() {
		obj, ok := v.(types.Object)
		if !ok {
			return list
		}
		attrs := obj.Attributes()
		vm, ok := attrs["vm"].(types.Int64)
		if !ok {
			return list
		}
		attrs["vm"] = holder(vm)
		o, d := types.ObjectValue(pciMappingEntryObjectType.AttrTypes, attrs)
		if d.HasError() {
			tflog.Debug(ctx, "could not set an entry's holder")
			return list
		}
		values = append(values, o)
	}
	out, d := types.ListValue(pciMappingEntryObjectType, values)
	if d.HasError() {
		return list
	}
	return out
}
