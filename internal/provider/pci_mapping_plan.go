package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// ModifyPlan resolves the entries from the nodes' hardware when the
// provider is configured and the device choice is known: a select block
// again at every plan (a card pulled drops out, a card moved shows at its
// new address), device blocks checked (a card gone is an error naming the
// block). The checks (resolveMapping) and the caller's Mapping.Modify
// (create: on /mapping/pci; update: on /mapping/pci/<id>; pve-manager
// PVE/API2/Cluster/Mapping/PCI.pm, subs create and update) run only when
// the plan changes the mapping: a plan that changes nothing keeps the
// state's entries and reads nothing more. A destroy checks only
// Mapping.Modify on /mapping/pci, which PVE's delete asks (sub delete).
// When the plan cannot know, Create and Update resolve and check before
// any write.
func (r *PCIMappingResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	var state *pciMappingModel
	if !req.State.Raw.IsNull() {
		state = &pciMappingModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	if req.Plan.Raw.IsNull() {
		if state != nil {
			if client, ok := r.clients.proxmoxAtPlan(ctx, &resp.Diagnostics); ok {
				resp.Diagnostics.Append(checkMappingModify(ctx, client, "", "delete the mapping")...)
			}
		}
		return
	}
	if blocksUnknown(ctx, req.Plan.GetAttribute, &resp.Diagnostics) {
		// Known at apply, which resolves and checks them before writing.
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("entries"), types.ListUnknown(pciMappingEntryObjectType))...)
		return
	}
	var plan pciMappingModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var mdev types.Bool // as configured: null follows the devices
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("mdev"), &mdev)...)
	settingsChange := state == nil || pciMappingSettingsChanged(state, &plan)
	client, ok := r.clients.proxmoxAtPlan(ctx, &resp.Diagnostics)
	if !ok || !plan.known() || plan.Name.IsUnknown() || mdev.IsUnknown() {
		if settingsChange {
			plan.Entries = types.ListUnknown(pciMappingEntryObjectType)
			if mdev.IsNull() {
				plan.Mdev = types.BoolUnknown()
			}
		}
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	var prior []proxmox.PCIMappingEntry
	if state != nil {
		prior, _ = stateEntries(ctx, state.Entries)
	}
	mreq := plan.request(ctx, prior, mdev)
	hw, err := readMappingHardware(ctx, client, mreq)
	if err != nil {
		if !settingsChange {
			// Nothing the user changed: the state stands, and a destroy's
			// plan is never blocked by a cluster that does not answer.
			resp.Diagnostics.AddWarning("checking the devices against Proxmox VE", err.Error()+"; the entries are not checked against "+
				"the hardware in this plan")
			plan.Entries = state.Entries
			resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
			return
		}
		resp.Diagnostics.AddAttributeError(blocksPath(mreq), "checking the devices against Proxmox VE", err.Error())
		return
	}
	switch {
	case hw.exists && state != nil && state.Name.ValueString() != plan.Name.ValueString():
		// A new name the cluster has: PVE would refuse the create, and
		// that mapping is not this resource's (its state names another).
		resp.Diagnostics.AddAttributeError(path.Root("name"), "PCI mapping exists already", mappingExistsFix(mreq.name))
		return
	case hw.exists && state == nil:
		// A create of a name the cluster has. Terraform plans the
		// replacement of a tainted object (a create whose answer was lost
		// keeps the mapping so) as a create too, with nothing that tells
		// the two apart: a warning; an apply that is no replacement fails
		// on PVE's refusal with the same fix, and saves nothing.
		resp.Diagnostics.AddAttributeWarning(path.Root("name"), "PCI mapping exists already", fmt.Sprintf("Unless this "+
			"resource's state holds mapping %q tainted (then the apply replaces it), the apply fails: PVE refuses to create "+
			"a mapping that exists. %s", mreq.name, mappingExistsFix(mreq.name)))
	}
	entries, resolvedMdev, diags := resolveMapping(mreq, hw)
	if mdev.IsNull() && !diags.HasError() {
		plan.Mdev = types.BoolValue(resolvedMdev)
		settingsChange = state == nil || pciMappingSettingsChanged(state, &plan)
	}
	entriesChange := state == nil || !sameEntries(prior, entries)
	if state != nil && sameEntries(prior, entries) && !settingsChange {
		// Nothing to apply: no checks, the state's entries and holders.
		plan.Entries = state.Entries
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	if !settingsChange && diags.HasError() {
		// Drift alone (a card pulled or moved, another mapping changed):
		// nothing the user changed, and a destroy plans the configuration
		// first, so the checks warn. The entries are unknown: the apply
		// resolves and checks them again, and fails before any write.
		resp.Diagnostics.Append(driftWarnings(diags)...)
		plan.Entries = types.ListUnknown(pciMappingEntryObjectType)
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if entriesChange {
		list, d := entryValues(entries, nil)
		resp.Diagnostics.Append(d...)
		plan.Entries = list
	} else {
		// The same devices, but the apply writes the mapping and reads
		// the holders back: a VM may start or stop meanwhile.
		plan.Entries = holdersUnknown(ctx, state.Entries)
	}
	if state == nil || state.Name.ValueString() != plan.Name.ValueString() {
		resp.Diagnostics.Append(checkMappingModify(ctx, client, "", "create the mapping")...)
	} else if d := checkMappingModify(ctx, client, plan.Name.ValueString(), "change the mapping"); settingsChange {
		resp.Diagnostics.Append(d...)
	} else {
		resp.Diagnostics.Append(driftWarnings(d)...) // PVE refuses the apply itself
	}
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// driftWarnings are diags with each error as a warning that says so: the
// checks of a plan caused by drift alone, which must not block a destroy.
func driftWarnings(diags diag.Diagnostics) diag.Diagnostics {
	const why = "\n\nThe configuration did not change (the hardware or the cluster's mappings did), so this is a warning: " +
		"an apply of this plan checks again and fails before writing the mapping; terraform destroy deletes it as it is."
	out := make(diag.Diagnostics, 0, len(diags))
	for _, d := range diags {
		if d.Severity() != diag.SeverityError {
			out.Append(d)
			continue
		}
		if p, ok := d.(diag.DiagnosticWithPath); ok {
			out.AddAttributeWarning(p.Path(), d.Summary(), d.Detail()+why)
		} else {
			out.AddWarning(d.Summary(), d.Detail()+why)
		}
	}
	return out
}

// pciMappingSettingsChanged says whether the plan changes anything the user
// sets that PVE holds: not the timeouts, which only the provider reads (a
// change of them alone writes nothing).
func pciMappingSettingsChanged(state, plan *pciMappingModel) bool {
	return state.Name.String() != plan.Name.String() || state.Description.String() != plan.Description.String() ||
		state.Mdev.String() != plan.Mdev.String() || state.LiveMigrationCapable.String() != plan.LiveMigrationCapable.String() ||
		fmt.Sprint(state.Select) != fmt.Sprint(plan.Select) || fmt.Sprint(state.Device) != fmt.Sprint(plan.Device)
}

// resolve reads the hardware m's devices depend on and resolves them.
// It sets m.Mdev to the flag resolved.
func (r *PCIMappingResource) resolve(ctx context.Context, client *proxmox.Client, m *pciMappingModel, prior []proxmox.PCIMappingEntry, mdev types.Bool) ([]resolvedEntry, diag.Diagnostics) {
	var diags diag.Diagnostics
	req := m.request(ctx, prior, mdev)
	start := time.Now()
	hw, err := readMappingHardware(ctx, client, req)
	if err != nil {
		diags.AddAttributeError(blocksPath(req), "checking the devices against Proxmox VE", err.Error())
		return nil, diags
	}
	tflog.Debug(ctx, "read the Proxmox VE hardware of a PCI mapping", map[string]any{
		"id": req.name, "nodes": len(hw.functions), "mappings": len(hw.others), "duration": time.Since(start).String(),
	})
	entries, resolved, diags := resolveMapping(req, hw)
	if !diags.HasError() {
		m.Mdev = types.BoolValue(resolved)
	}
	return entries, diags
}

// blocksPath is the block that chooses req's devices.
func blocksPath(req mappingRequest) path.Path {
	if req.selected {
		return path.Root("select")
	}
	return path.Root("device")
}

// readMappingHardware reads the cluster's nodes, the PCI functions of the
// online nodes req concerns (a select without nodes: every node),
// and the cluster's mappings other than req's (and whether req's exists).
func readMappingHardware(ctx context.Context, client *proxmox.Client, req mappingRequest) (mappingHardware, error) {
	hw := mappingHardware{functions: map[string][]proxmox.PCIFunction{}}
	nodes, err := client.Nodes(ctx)
	if err != nil {
		return hw, err
	}
	online := map[string]bool{}
	for _, n := range nodes {
		hw.nodes = append(hw.nodes, n.Name)
		if n.Status == "" || n.Status == "online" {
			online[n.Name] = true
		}
	}
	wanted := req.nodes
	if req.selected && len(wanted) == 0 {
		wanted = hw.nodes // the offline ones are not read: resolveSelect keeps their entries
	}
	for _, d := range req.devices {
		wanted = append(wanted, d.node)
	}
	for _, node := range wanted {
		if _, done := hw.functions[node]; done || !online[node] {
			continue
		}
		fns, err := client.PCIFunctions(ctx, node)
		if err != nil {
			return hw, err
		}
		hw.functions[node] = fns
	}
	mappings, err := client.PCIMappings(ctx)
	if err != nil {
		return hw, err
	}
	for _, m := range mappings {
		if m.ID == req.name {
			hw.exists = true
		} else {
			hw.others = append(hw.others, m)
		}
	}
	return hw, nil
}

// checkMappingModify is the plan error for a caller without Mapping.Modify
// on /mapping/pci (id "") or /mapping/pci/<id>, with the fix. A failed
// read of the privileges is no error: the apply meets PVE's own check.
func checkMappingModify(ctx context.Context, client *proxmox.Client, id, what string) diag.Diagnostics {
	var diags diag.Diagnostics
	privPath := "/mapping/pci"
	if id != "" {
		privPath += "/" + id
	}
	privs, err := client.MappingPrivileges(ctx, id)
	if err != nil {
		tflog.Debug(ctx, "could not read the privileges on "+privPath, map[string]any{"error": err.Error()})
		return diags
	}
	if _, ok := privs["Mapping.Modify"]; ok {
		return diags
	}
	diags.AddAttributeError(path.Root("name"), "No permission to "+what, fmt.Sprintf("Proxmox VE would refuse to %s (HTTP 403). %s",
		what, mappingModifyFix(client.Identity(), privPath)))
	return diags
}
