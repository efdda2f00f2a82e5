package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

var (
	_ resource.Resource                   = &PCIMappingResource{}
	_ resource.ResourceWithConfigure      = &PCIMappingResource{}
	_ resource.ResourceWithImportState    = &PCIMappingResource{}
	_ resource.ResourceWithValidateConfig = &PCIMappingResource{}
	_ resource.ResourceWithModifyPlan     = &PCIMappingResource{}
)

// Default bounds of the work, when the timeouts block leaves them out: each
// is one API request (PVE writes the mapping under a cluster lock) and the
// reads around it.
const (
	pciMappingCreateTimeout = 2 * time.Minute
	pciMappingUpdateTimeout = 2 * time.Minute
	pciMappingDeleteTimeout = 2 * time.Minute
	// pciMappingReadBackTimeout bounds the read that tells whether a
	// failed create made the mapping, on a context of its own (the
	// create's may have ended).
	pciMappingReadBackTimeout = 30 * time.Second
)

// PCIMappingResource is `gpu_pci_mapping`: a Proxmox VE cluster PCI
// resource mapping of NVIDIA GPUs.
type PCIMappingResource struct {
	clients *Clients
}

// NewPCIMappingResource is the constructor the provider registers.
func NewPCIMappingResource() resource.Resource { return &PCIMappingResource{} }

func (r *PCIMappingResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_pci_mapping"
}

func (r *PCIMappingResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = pciMappingSchema(ctx)
}

func (r *PCIMappingResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	clients, diags := clientsFrom(req.ProviderData)
	resp.Diagnostics.Append(diags...)
	r.clients = clients
}

func (r *PCIMappingResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	if blocksUnknown(ctx, req.Config.GetAttribute, &resp.Diagnostics) {
		return // a dynamic block over values known at apply: checked then
	}
	var config pciMappingModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(config.validate()...)
}

func (r *PCIMappingResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan pciMappingModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "creating Proxmox VE " + plan.describe()
	client := r.clients.proxmoxFor(ctx, summary, &resp.Diagnostics)
	if client == nil {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, pciMappingCreateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// The entries the plan resolved, or (when it could not know) resolved
	// and checked now, before any write.
	entries, ok := plannedEntries(ctx, plan.Entries)
	if !ok {
		var diags diag.Diagnostics
		entries, diags = r.resolve(ctx, client, &plan, nil, plan.Mdev)
		resp.Diagnostics.Append(diags...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	mapping := plan.toMapping(entries)
	if resp.Diagnostics.Append(checkOverlapsAtWrite(ctx, client, summary, mapping, entries)...); resp.Diagnostics.HasError() {
		return
	}
	start := time.Now()
	err := client.CreatePCIMapping(ctx, mapping)
	if mappingAlreadyDefined(err) {
		// PVE refused: the mapping of that ID is someone else's (or an
		// earlier one of the user's), not made by this create. Reading it
		// back would put it in the state, and the next apply or destroy
		// would change or delete it.
		resp.Diagnostics.Append(pciMappingBackendError(summary, client, mapping.ID, true, err)...)
		return
	}
	if err != nil {
		// Whether PVE made the mapping (an answer lost, a timeout after
		// the write) decides whether it goes in the state.
		readCtx, cancelRead := context.WithTimeout(context.WithoutCancel(ctx), pciMappingReadBackTimeout)
		defer cancelRead()
		live, found, readErr := client.ReadPCIMapping(readCtx, mapping.ID)
		if readErr != nil || !found {
			resp.Diagnostics.Append(pciMappingBackendError(summary, client, mapping.ID, true, err)...)
			return
		}
		r.setFromLive(readCtx, client, &plan, live, &resp.Diagnostics)
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		resp.Diagnostics.AddError(summary, err.Error()+"\n\nProxmox VE made the mapping nonetheless: it is kept in the state, "+
			"tainted; apply again to replace it, or destroy it.")
		return
	}
	tflog.Debug(ctx, "created Proxmox VE PCI mapping", map[string]any{"id": mapping.ID, "entries": len(mapping.Entries), "duration": time.Since(start).String()})
	r.readBack(ctx, client, &plan, summary, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// readBack reads the mapping just written into m; when it cannot be
// read, m keeps what was written, with no holders.
func (r *PCIMappingResource) readBack(ctx context.Context, client *proxmox.Client, m *pciMappingModel, summary string, diags *diag.Diagnostics) {
	live, found, err := client.ReadPCIMapping(ctx, m.Name.ValueString())
	if err != nil || !found {
		detail := "not found"
		if err != nil {
			detail = err.Error()
		}
		diags.AddWarning(summary, "reading the mapping back: "+detail+"; the next refresh reads it")
		m.ID = m.Name
		m.Entries = unknownHoldersAsNull(ctx, m.Entries)
		return
	}
	r.setFromLive(ctx, client, m, live, diags)
}

func (r *PCIMappingResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state pciMappingModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "reading Proxmox VE " + state.describe()
	client := r.clients.proxmoxFor(ctx, summary, &resp.Diagnostics)
	if client == nil {
		return
	}
	start := time.Now()
	live, found, err := client.ReadPCIMapping(ctx, state.Name.ValueString())
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	tflog.Debug(ctx, "read Proxmox VE PCI mapping", map[string]any{"id": state.Name.ValueString(), "found": found, "duration": time.Since(start).String()})
	if !found {
		resp.Diagnostics.AddWarning(summary, fmt.Sprintf("PCI mapping %q no longer exists (deleted outside Terraform): it is removed "+
			"from the state, and the next apply creates it again.", state.Name.ValueString()))
		resp.State.RemoveResource(ctx)
		return
	}
	r.setFromLive(ctx, client, &state, live, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *PCIMappingResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, prior pciMappingModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "updating Proxmox VE " + plan.describe()
	client := r.clients.proxmoxFor(ctx, summary, &resp.Diagnostics)
	if client == nil {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, pciMappingUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	entries, ok := plannedEntries(ctx, plan.Entries)
	priorEntries, _ := stateEntries(ctx, prior.Entries)
	if ok && !pciMappingSettingsChanged(&prior, &plan) && sameEntries(priorEntries, entries) {
		// The timeouts alone changed: PVE holds nothing of them.
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		return
	}
	if !ok {
		var diags diag.Diagnostics
		entries, diags = r.resolve(ctx, client, &plan, priorEntries, plan.Mdev)
		resp.Diagnostics.Append(diags...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	mapping := plan.toMapping(entries)
	if resp.Diagnostics.Append(checkOverlapsAtWrite(ctx, client, summary, mapping, entries)...); resp.Diagnostics.HasError() {
		return
	}
	start := time.Now()
	err := updateMapping(ctx, client, mapping, &prior)
	if errors.Is(err, errMappingDigest) {
		err = updateMapping(ctx, client, mapping, &prior) // another mapping changed between the read and the write
	}
	if err != nil {
		resp.Diagnostics.Append(pciMappingBackendError(summary, client, mapping.ID, false, err)...)
		return
	}
	tflog.Debug(ctx, "updated Proxmox VE PCI mapping", map[string]any{"id": mapping.ID, "entries": len(mapping.Entries), "duration": time.Since(start).String()})
	r.readBack(ctx, client, &plan, summary, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// checkOverlapsAtWrite reads the cluster's mappings right before m is
// written and checks m's entries against them as the plan did: another
// gpu_pci_mapping of the same apply (or anyone) may have mapped a device
// since the plan. A passthrough overlap refuses the write.
func checkOverlapsAtWrite(ctx context.Context, client *proxmox.Client, summary string, m proxmox.PCIMapping, entries []resolvedEntry) diag.Diagnostics {
	var diags diag.Diagnostics
	mappings, err := client.PCIMappings(ctx)
	if err != nil {
		diags.AddError(summary, "checking the devices against the cluster's other mappings before writing: "+err.Error())
		return diags
	}
	return overlapsAtWrite(m, entries, mappings)
}

// errMappingDigest marks an update PVE refused because the mapping file
// changed between the read of its digest and the write.
var errMappingDigest = errors.New("the cluster's PCI mappings changed between the read and the write")

// updateMapping writes m over the mapping prior (the state the plan was
// made from), with the digest of the mapping file read right before: PVE's
// digest is of the whole mapping/pci.cfg, so any mapping's change changes
// it (pve-manager PVE/API2/Cluster/Mapping/PCI.pm update,
// assert_if_modified). The mapping must still be what the plan saw.
func updateMapping(ctx context.Context, client *proxmox.Client, m proxmox.PCIMapping, prior *pciMappingModel) error {
	live, found, err := client.ReadPCIMapping(ctx, m.ID)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("PCI mapping %s was deleted since the plan: plan again (the next plan creates it)", m.ID)
	}
	if changed := liveDiffers(ctx, live, prior); changed != "" {
		return fmt.Errorf("PCI mapping %s changed outside Terraform since the plan (%s): plan again to see the change", m.ID, changed)
	}
	err = client.UpdatePCIMapping(ctx, m, live.Digest)
	var api *proxmox.APIError
	if errors.As(err, &api) && strings.Contains(api.Message, "detected modified configuration") {
		return fmt.Errorf("%w: %w", errMappingDigest, err)
	}
	return err
}

// liveDiffers names what of live differs from the state prior ("" when
// nothing): its settings or its entries.
func liveDiffers(ctx context.Context, live proxmox.PCIMapping, prior *pciMappingModel) string {
	var out []string
	if live.Description != prior.Description.ValueString() {
		out = append(out, "description")
	}
	if live.Mdev != prior.Mdev.ValueBool() {
		out = append(out, "mdev")
	}
	if live.LiveMigrationCapable != prior.LiveMigrationCapable.ValueBool() {
		out = append(out, "live-migration-capable")
	}
	entries := make([]resolvedEntry, len(live.Entries))
	for i, e := range live.Entries {
		entries[i] = resolvedEntry{PCIMappingEntry: e}
	}
	if priorEntries, _ := stateEntries(ctx, prior.Entries); !sameEntries(priorEntries, entries) {
		out = append(out, "its map")
	}
	return strings.Join(out, ", ")
}

func (r *PCIMappingResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state pciMappingModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "deleting Proxmox VE " + state.describe()
	client := r.clients.proxmoxFor(ctx, summary, &resp.Diagnostics)
	if client == nil {
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, pciMappingDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := client.DeletePCIMapping(ctx, state.Name.ValueString()); err != nil {
		resp.Diagnostics.Append(pciMappingBackendError(summary, client, state.Name.ValueString(), false, err)...)
	}
}

// ImportState takes the mapping ID; Read fills the rest, the devices as
// device blocks.
func (r *PCIMappingResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if !pveMappingPattern.MatchString(req.ID) {
		resp.Diagnostics.AddError("importing Proxmox VE PCI mapping", fmt.Sprintf("import ID %q is not a mapping ID (a letter, then "+
			"letters, digits, '-' and '_'): give the mapping's ID as Datacenter → Resource Mappings lists it, e.g. l40s-pool", req.ID))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), req.ID)...)
}

// blocksUnknown says whether the select or device blocks are unknown as a
// whole (a dynamic block over values known only at apply), which the
// model's slices cannot hold.
func blocksUnknown(ctx context.Context, get func(context.Context, path.Path, any) diag.Diagnostics, diags *diag.Diagnostics) bool {
	for _, name := range []string{"select", "device"} {
		var list types.List
		diags.Append(get(ctx, path.Root(name), &list)...)
		if list.IsUnknown() {
			return true
		}
	}
	return false
}

// pciMappingBackendError is a backend error as a diagnostic: a refused
// privilege with the pveum fix, an existing mapping on name with the
// import, a digest mismatch with what to do.
func pciMappingBackendError(summary string, client *proxmox.Client, id string, create bool, err error) diag.Diagnostics {
	var diags diag.Diagnostics
	var perm *proxmox.PermissionError
	if errors.As(err, &perm) {
		privPath := perm.Path
		if privPath == "" {
			// create and delete: /mapping/pci; update: /mapping/pci/<id>
			// (pve-manager PVE/API2/Cluster/Mapping/PCI.pm).
			privPath = "/mapping/pci"
			if !create && !strings.HasPrefix(summary, "deleting") {
				privPath += "/" + id
			}
		}
		diags.AddError(summary, err.Error()+"\n\n"+mappingModifyFix(client.Identity(), privPath))
		return diags
	}
	if create && mappingAlreadyDefined(err) {
		diags.AddAttributeError(path.Root("name"), summary, err.Error()+"\n\n"+mappingExistsFix(id))
		return diags
	}
	var api *proxmox.APIError
	if errors.As(err, &api) {
		switch {
		case strings.Contains(api.Message, "detected modified configuration"):
			diags.AddError(summary, err.Error()+"\n\nThe cluster's PCI mappings changed since the plan read them: plan and apply "+
				"again.")
			return diags
		}
	}
	diags.AddError(summary, err.Error())
	return diags
}

// mappingAlreadyDefined says whether err is PVE's refusal of a create
// because a mapping of that ID exists: pve-manager
// PVE/API2/Cluster/Mapping/PCI.pm, sub create, dies "pci ID '$id' already
// defined" inside lock_file, whose failure is "create hardware mapping
// failed: ..." (HTTP 500).
func mappingAlreadyDefined(err error) bool {
	var api *proxmox.APIError
	return errors.As(err, &api) && strings.Contains(api.Message, "pci ID '") && strings.Contains(api.Message, "' already defined")
}

// mappingExistsFix is what to do about a mapping of the name id that
// exists already, outside this resource's state.
func mappingExistsFix(id string) string {
	return fmt.Sprintf("A PCI mapping %q exists already in the cluster, and this resource would create it: Terraform does "+
		"not take it over (its next apply or destroy would change or delete it). To manage it with Terraform, import it: "+
		"terraform import gpu_pci_mapping.<resource name> %s (or an import block with id = %q); else choose another name.", id, id, id)
}

// mappingModifyFix says who lacks Mapping.Modify on privPath and the pveum
// command that grants it.
func mappingModifyFix(who proxmox.Identity, privPath string) string {
	return fmt.Sprintf("The provider authenticates as %s, which lacks Mapping.Modify on %s, and Proxmox VE checks it there "+
		"(pve-manager PVE/API2/Cluster/Mapping/PCI.pm). Grant it, e.g.: %s",
		who, privPath, proxmox.GrantCommand(who, privPath, "PVEMappingAdmin"))
}

// plannedEntries are the entries of a plan, when the plan knew them.
func plannedEntries(ctx context.Context, list types.List) ([]resolvedEntry, bool) {
	if list.IsNull() || list.IsUnknown() {
		return nil, false
	}
	entries, models := stateEntries(ctx, list)
	if entries == nil && len(list.Elements()) > 0 {
		return nil, false
	}
	out := make([]resolvedEntry, len(entries))
	for i, e := range entries {
		out[i] = resolvedEntry{PCIMappingEntry: e, product: models[i].Product.ValueString()}
	}
	return out, true
}
