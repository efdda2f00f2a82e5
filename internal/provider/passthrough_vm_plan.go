package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// ModifyPlan plans the computed attributes (status from started; gpus and
// ipv4 unknown when they may change: see plannedGPUs), refuses a change Proxmox
// makes only to a stopped VM when the VM runs and allow_restart is off,
// and runs the preflight against the node when the plan can know: the node
// and the GPUs are known and the provider is configured with known
// settings, and the GPUs change or a stopped VM is to start. On a
// refresh-only plan with nothing changed, nothing is read. A destroy
// (null plan) runs no preflight; in any other plan a conflict with another
// VM is a warning and a create counts no VM of its own name as one (see
// preflightVM.planned), because Terraform makes that same plan before a
// destroy: the apply's create or update refuses the conflict before any
// write. The one exception is a pool with no free device for a VM that
// does not exist yet, refused at plan (preflightDiagnostics).
func (r *PassthroughVMResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var plan passthroughVMModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	var state *passthroughVMModel
	if !req.State.Raw.IsNull() {
		state = &passthroughVMModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	if resp.Diagnostics.HasError() {
		return
	}

	if state != nil && !passthroughChanged(state, &plan) {
		return
	}
	gpusChange := state == nil || !gpusEqual(state.GPU, plan.GPU)
	if plan.Started.IsUnknown() {
		plan.Status = types.StringUnknown()
	} else if plan.Started.ValueBool() {
		plan.Status = types.StringValue("running")
	} else {
		plan.Status = types.StringValue("stopped")
	}
	plan.IPv4 = types.ListUnknown(types.StringType)
	plan.GPUs = plannedGPUs(state, &plan)
	if state != nil {
		resp.Diagnostics.Append(restartNeeded(ctx, state, &plan)...)
	}
	check := gpusChange || (state != nil && startsStopped(state, &plan))
	if !resp.Diagnostics.HasError() && check && len(plan.GPU) > 0 && !plan.Node.IsUnknown() && gpusKnown(plan.GPU) {
		if client, ok := r.clients.proxmoxAtPlan(ctx, &resp.Diagnostics); ok {
			vm := preflightVM{node: plan.Node.ValueString(), planned: true, starting: boolOr(plan.Started, true)}
			if state != nil {
				vm.vmid = int(state.VMID.ValueInt64())
			} else {
				vm.name = plan.Name.ValueString()
				if !plan.VMID.IsUnknown() {
					vm.newVMID = int(plan.VMID.ValueInt64())
				}
			}
			resp.Diagnostics.Append(preflight(ctx, client, vm, plan.gpuSpecs())...)
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// plannedGPUs is gpus in a plan that changes the VM (state nil: creates
// it): the state's value only when the GPUs stay the same raw addresses,
// which resolve to the same devices whatever else the apply does; unknown
// otherwise. A GPU by mapping resolves through the mapping's entries on
// the node (candidates, and pci_address for an entry of its own or the
// device a pool gave the VM), which the same apply may change (a
// gpu_pci_mapping adding a card): keeping the state's value would make the
// update's read back an inconsistent result. A pool also gives the VM a
// device at each start and takes it back at the stop.
func plannedGPUs(state, plan *passthroughVMModel) types.List {
	if state == nil || state.GPUs.IsNull() || state.GPUs.IsUnknown() || !gpusEqual(state.GPU, plan.GPU) {
		return types.ListUnknown(passthroughGPUStatusObjectType)
	}
	for _, g := range plan.GPU {
		if !g.Mapping.IsNull() {
			return types.ListUnknown(passthroughGPUStatusObjectType)
		}
	}
	return state.GPUs
}

// startsStopped says whether the plan starts a VM the state has stopped,
// which the preflight checks as it checks a create: the start may find
// its GPUs held.
func startsStopped(state, plan *passthroughVMModel) bool {
	return state.Status.ValueString() != "running" && boolOr(plan.Started, true)
}

// passthroughChanged says whether the plan changes anything the user sets.
func passthroughChanged(state, plan *passthroughVMModel) bool {
	scalars := []struct{ a, b fmt.Stringer }{
		{state.Node, plan.Node}, {state.VMID, plan.VMID}, {state.Name, plan.Name}, {state.Cores, plan.Cores},
		{state.Sockets, plan.Sockets}, {state.CPUType, plan.CPUType}, {state.MemoryMiB, plan.MemoryMiB},
		{state.Machine, plan.Machine}, {state.BIOS, plan.BIOS}, {state.Tags, plan.Tags}, {state.Started, plan.Started},
		{state.OnBoot, plan.OnBoot}, {state.AllowRestart, plan.AllowRestart},
	}
	for _, s := range scalars {
		if s.a.String() != s.b.String() {
			return true
		}
	}
	return !gpusEqual(state.GPU, plan.GPU) || fmt.Sprint(state.Clone) != fmt.Sprint(plan.Clone) ||
		fmt.Sprint(state.EFIDisk) != fmt.Sprint(plan.EFIDisk) || fmt.Sprint(state.Disk) != fmt.Sprint(plan.Disk) ||
		fmt.Sprint(state.Network) != fmt.Sprint(plan.Network) || fmt.Sprint(state.CloudInit) != fmt.Sprint(plan.CloudInit) ||
		state.Timeouts.String() != plan.Timeouts.String()
}

// restartNeeded is the plan error for a change Proxmox applies only to a
// stopped VM (the backend's proxmox.StopFields: the GPUs, CPU, memory)
// while the VM runs and stays running, without allow_restart. Unknown
// planned values count as unchanged; attributes whose change replaces the
// VM are not compared.
func restartNeeded(ctx context.Context, state, plan *passthroughVMModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if state.Status.ValueString() != "running" || plan.AllowRestart.IsUnknown() || plan.AllowRestart.ValueBool() {
		return diags
	}
	if plan.Started.IsUnknown() || !plan.Started.ValueBool() {
		return diags // stopped by this apply: the change applies to a stopped VM
	}
	prior, planned := state.toSpec(ctx), state.toSpec(ctx)
	if gpusKnown(plan.GPU) {
		planned.GPUs = plan.gpuSpecs()
	}
	if !plan.Cores.IsUnknown() {
		planned.Cores = int(plan.Cores.ValueInt64())
	}
	if !plan.Sockets.IsUnknown() {
		planned.Sockets = int(plan.Sockets.ValueInt64())
	}
	if !plan.CPUType.IsUnknown() {
		planned.CPUType = plan.CPUType.ValueString()
	}
	if !plan.MemoryMiB.IsUnknown() {
		planned.MemoryMiB = int(plan.MemoryMiB.ValueInt64())
	}
	var changed []string
	for _, f := range proxmox.StopFields(prior, planned) {
		changed = append(changed, fieldPath(f).String())
	}
	if len(changed) == 0 {
		return diags
	}
	what := "its GPUs (hostpci)"
	if changed[0] != "gpu" {
		what = strings.Join(changed, ", ")
	}
	diags.AddAttributeError(path.Root(changed[0]), "Change needs a restart",
		fmt.Sprintf("VM %s is running, and Proxmox changes %s only while the VM is stopped (changed: %s). Set allow_restart = true "+
			"to let apply stop the VM, make the change and start it again; or stop it first (started = false), then apply the change",
			state.describe(), what, strings.Join(changed, ", ")))
	return diags
}
