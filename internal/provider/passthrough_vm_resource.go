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
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

var (
	_ resource.Resource                   = &PassthroughVMResource{}
	_ resource.ResourceWithConfigure      = &PassthroughVMResource{}
	_ resource.ResourceWithImportState    = &PassthroughVMResource{}
	_ resource.ResourceWithValidateConfig = &PassthroughVMResource{}
	_ resource.ResourceWithModifyPlan     = &PassthroughVMResource{}
)

// Default bounds of the work, when the timeouts block leaves them out.
const (
	passthroughCreateTimeout = 20 * time.Minute
	passthroughUpdateTimeout = 20 * time.Minute
	passthroughDeleteTimeout = 10 * time.Minute
)

// PassthroughVMResource is `gpu_passthrough_vm`: a Proxmox VE VM with
// NVIDIA GPUs passed through.
type PassthroughVMResource struct {
	clients *Clients
}

// NewPassthroughVMResource is the constructor the provider registers.
func NewPassthroughVMResource() resource.Resource { return &PassthroughVMResource{} }

func (r *PassthroughVMResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_passthrough_vm"
}

func (r *PassthroughVMResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = passthroughVMSchema(ctx)
}

func (r *PassthroughVMResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	clients, diags := clientsFrom(req.ProviderData)
	resp.Diagnostics.Append(diags...)
	r.clients = clients
}

func (r *PassthroughVMResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var config passthroughVMModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(config.validate()...)
}

func (r *PassthroughVMResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan passthroughVMModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "creating Proxmox VM " + plan.describe()
	client := r.clients.proxmoxFor(ctx, summary, &resp.Diagnostics)
	if client == nil {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, passthroughCreateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// The preflight again, before any write: values unknown at plan are
	// known now, and a GPU may have been taken since.
	vm := preflightVM{node: plan.Node.ValueString(), starting: boolOr(plan.Started, true)}
	if !plan.VMID.IsUnknown() && !plan.VMID.IsNull() {
		vm.newVMID = int(plan.VMID.ValueInt64())
	}
	resp.Diagnostics.Append(preflight(ctx, client, vm, plan.gpuSpecs())...)
	if resp.Diagnostics.HasError() {
		return
	}
	// Without vmid the backend picks a free one (/cluster/nextid) and
	// holds it until its create request is answered, so that resources
	// created in parallel never pick the same one.
	spec := plan.toSpec(ctx)
	start := time.Now()
	live, err := client.CreateVM(ctx, spec)
	if err != nil && live.VMID == 0 {
		// Nothing exists: nothing to keep in the state.
		resp.Diagnostics.Append(passthroughBackendError(summary, err)...)
		return
	}
	// From here on the state is saved even on error (a create cut short
	// by Ctrl-C or timeouts.create, or whose answer was lost, included),
	// so that a failed create is tainted and destroyed by the next apply,
	// never orphaned.
	facts, diags := r.readFacts(ctx, client, live)
	resp.Diagnostics.Append(diags...)
	prior := plan
	if differs := plan.efiDiskDiffers(live); differs != "" {
		resp.Diagnostics.AddAttributeWarning(path.Root("efi_disk"), summary, differs+"; the next plan replaces the VM otherwise")
	}
	resp.Diagnostics.Append(plan.setFromLive(live, facts)...)
	if err != nil {
		if at, pool, ok := poolStartFailure(ctx, client, live.Node, spec.GPUs, err); ok {
			resp.Diagnostics.AddAttributeError(at, summary, passthroughKeptDetail(fmt.Errorf("%w\n\n%s", err, pool), ctx.Err()))
		} else {
			resp.Diagnostics.AddError(summary, passthroughKeptDetail(err, ctx.Err()))
		}
		plan.keepPlanned(&prior)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	if err != nil {
		// What the create did not learn is null, not unknown, in the
		// tainted state.
		resp.Diagnostics.Append(unknownsAsNull(&resp.State)...)
		return
	}
	tflog.Debug(ctx, "created Proxmox VM", map[string]any{"node": live.Node, "vmid": live.VMID, "duration": time.Since(start).String()})
}

// passthroughBackendError is a backend error as a diagnostic, on the
// attribute it concerns where there is one: the field of the spec a
// *proxmox.FieldError names, allow_restart (with the fix) for a change
// that needs a restart, the clone source, vmid.
func passthroughBackendError(summary string, err error) diag.Diagnostics {
	var diags diag.Diagnostics
	var field *proxmox.FieldError
	var restart *proxmox.RestartNeededError
	var source *proxmox.CloneSourceError
	switch {
	case errors.As(err, &field):
		diags.AddAttributeError(fieldPath(field.Field), summary, err.Error())
	case errors.As(err, &restart):
		diags.AddAttributeError(path.Root("allow_restart"), summary, fmt.Sprintf("%s\n\nSet allow_restart = true (the VM is stopped "+
			"and started to apply %s), or started = false (the VM is stopped, then changed), and apply again.",
			err, strings.Join(restart.Changes, ", ")))
	case errors.As(err, &source):
		diags.AddAttributeError(path.Root("clone").AtListIndex(0).AtName("source"), summary, err.Error())
	case errors.Is(err, proxmox.ErrVMIDsTaken):
		diags.AddAttributeError(path.Root("vmid"), summary, err.Error()+": set vmid")
	default:
		diags.AddError(summary, err.Error())
	}
	return diags
}

// unknownsAsNull turns the unknown values left in state into nulls: a
// failed create's state is saved, and Terraform refuses unknowns there.
func unknownsAsNull(state *tfsdk.State) diag.Diagnostics {
	var diags diag.Diagnostics
	raw, err := tftypes.Transform(state.Raw, func(_ *tftypes.AttributePath, v tftypes.Value) (tftypes.Value, error) {
		if !v.IsKnown() {
			return tftypes.NewValue(v.Type(), nil), nil
		}
		return v, nil
	})
	if err != nil {
		diags.AddError("saving the state of a failed create", err.Error())
		return diags
	}
	state.Raw = raw
	return diags
}

// keepPlanned keeps what was planned for the attributes a failed create
// may not have reached, so the saved (tainted) state is consistent.
func (m *passthroughVMModel) keepPlanned(prior *passthroughVMModel) {
	if m.Name.ValueString() == "" {
		m.Name = prior.Name
	}
}

func (r *PassthroughVMResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state passthroughVMModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "reading Proxmox VM " + state.describe()
	client := r.clients.proxmoxFor(ctx, summary, &resp.Diagnostics)
	if client == nil {
		return
	}
	node, vmid := state.Node.ValueString(), int(state.VMID.ValueInt64())
	start := time.Now()
	live, found, err := client.ReadVM(ctx, node, vmid)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	tflog.Debug(ctx, "read Proxmox VM", map[string]any{"node": node, "vmid": vmid, "found": found, "duration": time.Since(start).String()})
	if !found {
		resp.Diagnostics.AddWarning(summary, fmt.Sprintf("VM %d on node %s no longer exists (deleted outside Terraform): it is removed "+
			"from the state, and the next apply creates it again.", vmid, node))
		resp.State.RemoveResource(ctx)
		return
	}
	var facts *proxmox.NodeFacts
	if len(live.HostPCI) > 0 {
		var diags diag.Diagnostics
		facts, diags = r.readFacts(ctx, client, live)
		resp.Diagnostics.Append(diags...)
	}
	resp.Diagnostics.Append(state.setFromLive(live, facts)...)
	state.refreshEFIDisk(live)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *PassthroughVMResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, prior passthroughVMModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "updating Proxmox VM " + plan.describe()
	client := r.clients.proxmoxFor(ctx, summary, &resp.Diagnostics)
	if client == nil {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, passthroughUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	if !gpusEqual(prior.GPU, plan.GPU) || startsStopped(&prior, &plan) {
		vm := preflightVM{node: plan.Node.ValueString(), vmid: int(prior.VMID.ValueInt64()), starting: plan.Started.ValueBool()}
		resp.Diagnostics.Append(preflight(ctx, client, vm, plan.gpuSpecs())...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	priorSpec, spec := prior.toSpec(ctx), plan.toSpec(ctx)
	start := time.Now()
	live, err := client.UpdateVM(ctx, priorSpec, spec, plan.AllowRestart.ValueBool())
	if err != nil {
		if live.VMID != 0 {
			// Part of the change happened: record what Proxmox has now.
			facts, diags := r.readFacts(ctx, client, live)
			resp.Diagnostics.Append(diags...)
			resp.Diagnostics.Append(prior.setFromLive(live, facts)...)
			prior.AllowRestart, prior.Timeouts = plan.AllowRestart, plan.Timeouts
			resp.Diagnostics.Append(resp.State.Set(ctx, &prior)...)
		}
		if at, pool, ok := poolStartFailure(ctx, client, spec.Node, spec.GPUs, err); ok {
			resp.Diagnostics.AddAttributeError(at, summary, err.Error()+"\n\n"+pool)
			return
		}
		resp.Diagnostics.Append(passthroughBackendError(summary, err)...)
		return
	}
	tflog.Debug(ctx, "updated Proxmox VM", map[string]any{"node": spec.Node, "vmid": spec.VMID, "duration": time.Since(start).String()})
	facts, diags := r.readFacts(ctx, client, live)
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(plan.setFromLive(live, facts)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *PassthroughVMResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state passthroughVMModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "deleting Proxmox VM " + state.describe()
	client := r.clients.proxmoxFor(ctx, summary, &resp.Diagnostics)
	if client == nil {
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, passthroughDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	err := client.DeleteVM(ctx, state.Node.ValueString(), int(state.VMID.ValueInt64()))
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	tflog.Debug(ctx, "deleted Proxmox VM", map[string]any{"node": state.Node.ValueString(), "vmid": state.VMID.ValueInt64(), "duration": time.Since(start).String()})
}

// ImportState takes `node/vmid`.
func (r *PassthroughVMResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	node, vmid, err := parsePassthroughVMID(req.ID)
	if err != nil {
		resp.Diagnostics.AddError("importing Proxmox VM", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("node"), node)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("vmid"), vmid)...)
}

// passthroughKeptDetail is the error of a create that left a VM, with
// what to do: after a create cut short (ended is its context's error:
// timeouts.create ran out, or Terraform was interrupted) or whose Proxmox
// task failed.
func passthroughKeptDetail(err, ended error) string {
	text := err.Error() + "\n\n"
	switch {
	case errors.Is(ended, context.DeadlineExceeded):
		return text + "The create ran past timeouts.create. The VM exists and is kept in the state, tainted: raise timeouts.create if " +
			"Proxmox needs longer, then apply again to replace it, or destroy it."
	case errors.Is(ended, context.Canceled):
		return text + "The create was interrupted. The VM exists and is kept in the state, tainted: apply again to replace it, or destroy it."
	}
	return text + "The VM exists and is kept in the state, tainted: fix the cause (the task's log above), then apply again to " +
		"replace it, or destroy it."
}
