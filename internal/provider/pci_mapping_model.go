package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// pciMappingModel is gpu_pci_mapping's configuration, plan and state.
type pciMappingModel struct {
	ID                   types.String            `tfsdk:"id"`
	Name                 types.String            `tfsdk:"name"`
	Description          types.String            `tfsdk:"description"`
	Mdev                 types.Bool              `tfsdk:"mdev"`
	LiveMigrationCapable types.Bool              `tfsdk:"live_migration_capable"`
	Entries              types.List              `tfsdk:"entries"`
	Select               []pciMappingSelectModel `tfsdk:"select"`
	Device               []pciMappingDeviceModel `tfsdk:"device"`
	Timeouts             timeouts.Value          `tfsdk:"timeouts"`
}

type pciMappingSelectModel struct {
	Product types.String `tfsdk:"product"`
	Nodes   types.List   `tfsdk:"nodes"`
}

type pciMappingDeviceModel struct {
	Node    types.String `tfsdk:"node"`
	Address types.String `tfsdk:"address"`
}

// validate is the check of the configuration alone: exactly one of select
// and device.
func (m *pciMappingModel) validate() diag.Diagnostics {
	var diags diag.Diagnostics
	switch {
	case len(m.Select) > 0 && len(m.Device) > 0:
		diags.AddAttributeError(path.Root("device"), "Both select and device", "A mapping's devices come from a select block or "+
			"from device blocks, not both: keep select (a product on some or every node, re-resolved at every plan) or the device "+
			"blocks (each device by node and address)")
	case len(m.Select) == 0 && len(m.Device) == 0:
		diags.AddAttributeError(path.Root("select"), "No devices", "A mapping needs devices: add a select block (e.g. select { "+
			"product = \"L40S\" }) or device blocks (device { node = \"pve-l40s\", address = \"0000:c1:00\" })")
	}
	return diags
}

// known says whether the configuration's device choice is known (not
// waiting on other resources), so the entries can be resolved.
func (m *pciMappingModel) known() bool {
	for _, s := range m.Select {
		if s.Product.IsUnknown() || s.Nodes.IsUnknown() {
			return false
		}
		for _, n := range s.Nodes.Elements() {
			if n.IsUnknown() {
				return false
			}
		}
	}
	for _, d := range m.Device {
		if d.Node.IsUnknown() || d.Address.IsUnknown() {
			return false
		}
	}
	return true
}

// request is what m asks the resolution for, with the entries of prior
// (the state; nil on create) to tell a moved card, and mdev as configured
// (null or unknown: it follows the devices).
func (m *pciMappingModel) request(ctx context.Context, prior []proxmox.PCIMappingEntry, mdev types.Bool) mappingRequest {
	req := mappingRequest{name: m.Name.ValueString(), prior: prior}
	if !mdev.IsNull() && !mdev.IsUnknown() {
		req.mdev, req.mdevSet = mdev.ValueBool(), true
	}
	if len(m.Select) > 0 {
		req.selected, req.product, req.nodes = true, m.Select[0].Product.ValueString(), stringsOf(ctx, m.Select[0].Nodes)
	}
	for _, d := range m.Device {
		req.devices = append(req.devices, mappingDevice{node: d.Node.ValueString(), address: proxmox.NormalizePCIAddress(d.Address.ValueString())})
	}
	return req
}

// toMapping is the mapping PVE is to hold.
func (m *pciMappingModel) toMapping(entries []resolvedEntry) proxmox.PCIMapping {
	out := proxmox.PCIMapping{
		ID: m.Name.ValueString(), Description: m.Description.ValueString(), Mdev: m.Mdev.ValueBool(),
		LiveMigrationCapable: m.LiveMigrationCapable.ValueBool(),
	}
	for _, e := range entries {
		out.Entries = append(out.Entries, e.PCIMappingEntry)
	}
	return out
}

// entryValues is entries as the value of the entries attribute; vm is the
// holder of each (nil: unknown, as in a plan).
func entryValues(entries []resolvedEntry, vm func(proxmox.PCIMappingEntry) types.Int64) (types.List, diag.Diagnostics) {
	values := make([]attr.Value, 0, len(entries))
	var diags diag.Diagnostics
	for _, e := range entries {
		holder := types.Int64Unknown()
		if vm != nil {
			holder = vm(e.PCIMappingEntry)
		}
		group := types.Int64Null()
		if e.IOMMUGroup >= 0 {
			group = types.Int64Value(int64(e.IOMMUGroup))
		}
		v, d := types.ObjectValue(pciMappingEntryObjectType.AttrTypes, map[string]attr.Value{
			"node": types.StringValue(e.Node), "path": types.StringValue(e.Path), "id": types.StringValue(e.ID),
			"subsystem_id": types.StringValue(e.SubsystemID), "iommu_group": group, "product": types.StringValue(e.product), "vm": holder,
		})
		diags.Append(d...)
		values = append(values, v)
	}
	list, d := types.ListValue(pciMappingEntryObjectType, values)
	diags.Append(d...)
	return list, diags
}

// pciMappingEntryModel is one element of entries.
type pciMappingEntryModel struct {
	Node        types.String `tfsdk:"node"`
	Path        types.String `tfsdk:"path"`
	ID          types.String `tfsdk:"id"`
	SubsystemID types.String `tfsdk:"subsystem_id"`
	IOMMUGroup  types.Int64  `tfsdk:"iommu_group"`
	Product     types.String `tfsdk:"product"`
	VM          types.Int64  `tfsdk:"vm"`
}

// stateEntries are the entries of a state or plan (none when unknown).
func stateEntries(ctx context.Context, list types.List) ([]proxmox.PCIMappingEntry, []pciMappingEntryModel) {
	if list.IsNull() || list.IsUnknown() {
		return nil, nil
	}
	var models []pciMappingEntryModel
	if diags := list.ElementsAs(ctx, &models, false); diags.HasError() {
		return nil, nil
	}
	out := make([]proxmox.PCIMappingEntry, len(models))
	for i, m := range models {
		group := -1
		if !m.IOMMUGroup.IsNull() && !m.IOMMUGroup.IsUnknown() {
			group = int(m.IOMMUGroup.ValueInt64())
		}
		out[i] = proxmox.PCIMappingEntry{Node: m.Node.ValueString(), Path: m.Path.ValueString(), ID: m.ID.ValueString(),
			SubsystemID: m.SubsystemID.ValueString(), IOMMUGroup: group}
	}
	return out, models
}

// sameEntries says whether two entry lists map the same devices with the
// same IDs, in the same order (the products and holders aside).
func sameEntries(a []proxmox.PCIMappingEntry, b []resolvedEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i].PCIMappingEntry
		if x.Node != y.Node || x.Path != y.Path || x.ID != y.ID || x.SubsystemID != y.SubsystemID || x.IOMMUGroup != y.IOMMUGroup {
			return false
		}
	}
	return true
}

// describe is "mapping l40s-pool", for summaries.
func (m *pciMappingModel) describe() string {
	return fmt.Sprintf("PCI mapping %q", m.Name.ValueString())
}

var _ validator.String = productSelectorValidator{}

// productSelectorValidator accepts a select.product: a substring, or a
// regular expression between slashes that compiles.
type productSelectorValidator struct{}

func (productSelectorValidator) Description(context.Context) string {
	return "value must be a part of a product name, or a regular expression between slashes, e.g. /A6000|L40S/"
}

func (v productSelectorValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (productSelectorValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := productMatcher(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid product", fmt.Sprintf("%s %s: the part between the slashes is not a "+
			"regular expression (%s). Fix it, or write a plain part of the product name without slashes", req.Path, quote(req.ConfigValue.ValueString()), err))
	}
}
