package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// ModifyPlan warns about a gpu block no node can serve today
// (warnAboutGPUOffer, workload_plan_offer.go), and replaces a Job whose
// change Kubernetes cannot make in place. Which changes those are is not
// listed here: each top-level attribute or block that changed is tried on
// its own on the prior state, and it forces a replacement when the Job the
// result builds differs from the prior Job in more than the fields
// Kubernetes lets a Job change (kube.JobNeedsReplacement). A new attribute
// is covered without a list to keep; a change whose value is unknown until
// apply replaces the Job.
func (r *WorkloadResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	r.warnAboutGPUOffer(ctx, req, resp)
	r.checkGPUPlacement(ctx, req, resp)
	if req.Plan.Raw.IsNull() || req.State.Raw.IsNull() {
		return
	}
	// replaceDRAClaimOnChange(ctx, req, resp)
	var kind types.String
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("kind"), &kind)...)
	if resp.Diagnostics.HasError() || kind.ValueString() != workloadKindJob {
		return
	}
	var planned, prior map[string]tftypes.Value
	if req.Plan.Raw.As(&planned) != nil || req.State.Raw.As(&prior) != nil {
		return
	}
	var state workloadModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	priorSpec, err := state.toSpec()
	if err != nil {
		return // a state this provider did not write: Update reports it
	}
	for name, value := range planned {
		if value.Equal(prior[name]) || computedOnly(req.Plan, name) {
			continue
		}
		if needsReplacement(ctx, req.State, prior, name, value, priorSpec) {
			resp.RequiresReplace = append(resp.RequiresReplace, path.Root(name))
		}
	}
}

// replaceDRAClaimOnChange replaces a DRA workload whose gpu block
// changed: the criteria live in its ResourceClaimTemplate, whose spec
// Kubernetes never changes, and which every pod of the workload names.
func replaceDRAClaimOnChange(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	var planned, prior types.Object
	var plannedAllocation, priorAllocation types.String
	if req.Plan.GetAttribute(ctx, gpuBlockPath, &planned).HasError() || req.State.GetAttribute(ctx, gpuBlockPath, &prior).HasError() ||
		req.Plan.GetAttribute(ctx, gpuAllocationPath, &plannedAllocation).HasError() || req.State.GetAttribute(ctx, gpuAllocationPath, &priorAllocation).HasError() {
		return
	}
	dra := string(kube.AllocateDRA)
	if planned.Equal(prior) || (plannedAllocation.ValueString() != dra && priorAllocation.ValueString() != dra) {
		return
	}
	resp.RequiresReplace = append(resp.RequiresReplace, gpuBlockPath)
}

// needsReplacement reports whether setting attribute name of the prior
// state to value changes the Job beyond what Kubernetes changes in place.
func needsReplacement(ctx context.Context, state tfsdk.State, prior map[string]tftypes.Value, name string, value tftypes.Value, priorSpec kube.WorkloadSpec) bool {
	if !value.IsFullyKnown() {
		return true
	}
	attrs := make(map[string]tftypes.Value, len(prior))
	for k, v := range prior {
		attrs[k] = v
	}
	attrs[name] = value
	state.Raw = tftypes.NewValue(state.Raw.Type(), attrs)
	var changed workloadModel
	if diags := state.Get(ctx, &changed); diags.HasError() {
		return true
	}
	spec, err := changed.toSpec()
	return err != nil || kube.JobNeedsReplacement(priorSpec, spec)
}

// computedOnly reports whether the schema's attribute name is set by the
// provider alone (the status attributes): it never forces a replacement.
func computedOnly(plan tfsdk.Plan, name string) bool {
	a, ok := plan.Schema.GetAttributes()[name]
	return ok && a.IsComputed() && !a.IsOptional() && !a.IsRequired()
}
