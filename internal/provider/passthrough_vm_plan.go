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
// ipv4 unknown when they may change), refuses a change Proxmox makes only
// to a stopped VM when the VM runs and allow_restart is off, and runs the
// preflight against the node when the plan can know: the node and the GPUs
// are known and the provider is configured with known settings. On a
// refresh-only plan with nothing changed, nothing is read.
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
	if gpusChange {
		plan.GPUs = types.ListUnknown(passthroughGPUStatusObjectType)
	} else {
		plan.GPUs = state.GPUs // the same hostpci lines resolve to the same devices
	}
	if state != nil {
		resp.Diagnostics.Append(restartNeeded(state, &plan)...)
	}
	if !resp.Diagnostics.HasError() && gpusChange && len(plan.GPU) > 0 && !plan.Node.IsUnknown() && gpusKnown(plan.GPU) {
		if client, ok := r.clients.proxmoxAtPlan(ctx, &resp.Diagnostics); ok {
			vm := preflightVM{node: plan.Node.ValueString()}
			if state != nil {
				vm.vmid = int(state.VMID.ValueInt64())
			} else if !plan.VMID.IsUnknown() {
				vm.newVMID = int(plan.VMID.ValueInt64())
			}
			resp.Diagnostics.Append(preflight(ctx, client, vm, plan.gpuSpecs())...)
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// preflightVM is the VM a preflight is for: on node, existing as vmid, or
// to be created (vmid 0) as newVMID (0: the next free one).
type preflightVM struct {
	node          string
	vmid, newVMID int
}

// preflight reads the facts of the VM's node and checks gpus against
// them, and that a VM to be created with a given vmid does not exist.
func preflight(ctx context.Context, client *proxmox.Client, vm preflightVM, gpus []proxmox.GPU) diag.Diagnostics {
	var diags diag.Diagnostics
	if len(gpus) == 0 {
		return diags
	}
	facts, err := readPassthroughFacts(ctx, client, vm.node, gpus)
	if err != nil {
		diags.AddAttributeError(path.Root("node"), "checking the GPUs against Proxmox VE", err.Error())
		return diags
	}
	diags.Append(checkNewVMID(vm, facts)...)
	diags.Append(preflightGPUs(vm.vmid, gpus, facts)...)
	return diags
}

// checkNewVMID refuses to create a VM whose vmid another VM has.
func checkNewVMID(vm preflightVM, facts *passthroughFacts) diag.Diagnostics {
	var diags diag.Diagnostics
	if vm.vmid != 0 || vm.newVMID == 0 {
		return diags
	}
	for _, g := range facts.Guests {
		if g.VMID == vm.newVMID {
			diags.AddAttributeError(path.Root("vmid"), "VM ID in use", fmt.Sprintf("vmid %d is VM %q on node %s already: to manage "+
				"it, import it (terraform import <address> %s/%d); else pick a free vmid, or leave vmid unset for the next free one",
				vm.newVMID, g.Name, g.Node, g.Node, g.VMID))
		}
	}
	return diags
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
// stopped VM (the GPUs, CPU, memory) while the VM runs and stays running,
// without allow_restart.
func restartNeeded(state, plan *passthroughVMModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if state.Status.ValueString() != "running" || plan.AllowRestart.IsUnknown() || plan.AllowRestart.ValueBool() {
		return diags
	}
	if plan.Started.IsUnknown() || !plan.Started.ValueBool() {
		return diags // stopped by this apply: the change applies to a stopped VM
	}
	var changed []string
	if gpusKnown(plan.GPU) && !gpusEqual(state.GPU, plan.GPU) {
		changed = append(changed, "gpu")
	}
	for _, c := range []struct {
		name string
		a, b fmt.Stringer
	}{
		{"cores", state.Cores, plan.Cores}, {"sockets", state.Sockets, plan.Sockets},
		{"cpu_type", state.CPUType, plan.CPUType}, {"memory_mib", state.MemoryMiB, plan.MemoryMiB},
	} {
		if !strings.Contains(c.b.String(), "<unknown>") && c.a.String() != c.b.String() {
			changed = append(changed, c.name)
		}
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
