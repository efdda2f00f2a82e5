package provider

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

// ModifyPlan fills what the plan can know before any write: the effective
// labels and taints, the default AMI type and the instance types' GPU
// facts; and refuses, from EC2's facts, instance types without NVIDIA
// GPUs, of mixed architectures, an AMI type that does not fit them, and
// types not offered in the subnets' zones. Values unknown until apply
// skip the checks that need them. Nothing is written here.
func (r *NodeGroupResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var plan, config nodeGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	var state *nodeGroupModel
	if !req.State.Raw.IsNull() {
		state = &nodeGroupModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	if resp.Diagnostics.HasError() {
		return
	}

	resp.Diagnostics.Append(plan.planEffective(ctx)...)
	if state != nil {
		planWaitAgain(ctx, req.Private, &plan, &resp.Diagnostics) // the last wait beyond ACTIVE failed: wait again in place
	}
	if r.checkAMIVersion(ctx, &plan, &resp.Diagnostics); resp.Diagnostics.HasError() {
		return
	}
	if state != nil && !plan.Version.Equal(state.Version) && config.ReleaseVersion.IsNull() {
		plan.ReleaseVersion = types.StringUnknown() // the new version's latest release
	}
	if state != nil && !slices.Equal(launchTemplateVersions(plan.LaunchTemplate), launchTemplateVersions(state.LaunchTemplate)) && config.ReleaseVersion.IsNull() {
		plan.ReleaseVersion = types.StringUnknown()
	}

	r.planCapacity(ctx, state, &plan, &config, &resp.Diagnostics) // node_group_capacity_plan.go
	if state != nil && !plan.needsFacts(state, &config) {
		// The same types: the same GPUs.
		plan.GPUProduct, plan.GPUsPerNode, plan.GPUMemoryMiB = state.GPUProduct, state.GPUsPerNode, state.GPUMemoryMiB
		resp.Diagnostics.Append(plan.planNodeTemplateTags(ctx)...)
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	names := stringsOf(ctx, plan.InstanceTypes)
	if plan.InstanceTypes.IsUnknown() || len(names) != len(plan.InstanceTypes.Elements()) {
		// Known only at apply: the checks run then, in Create, before the write.
		if config.AMIType.IsNull() {
			plan.AMIType = types.StringUnknown()
		}
		plan.GPUProduct, plan.GPUsPerNode, plan.GPUMemoryMiB = types.StringUnknown(), types.Int64Unknown(), types.Int64Unknown()
		plan.NodeTemplateTags = types.MapUnknown(types.StringType)
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	if r.clients == nil {
		return // not configured yet (validation): Terraform plans again once it is
	}
	checked := r.checkAgainstEC2(ctx, &plan, &config, &resp.Diagnostics)
	if resp.Diagnostics.HasError() || !checked {
		return
	}
	if state != nil && !plan.AMIType.Equal(state.AMIType) {
		resp.RequiresReplace = append(resp.RequiresReplace, path.Root("ami_type"))
	}
	resp.Diagnostics.Append(plan.planNodeTemplateTags(ctx)...)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// needsFacts says whether EC2's facts must be read again: on create, and
// when an attribute they check changes.
func (m *nodeGroupModel) needsFacts(state, config *nodeGroupModel) bool {
	return !m.InstanceTypes.Equal(state.InstanceTypes) || !m.SubnetIDs.Equal(state.SubnetIDs) ||
		(!config.AMIType.IsNull() && !config.AMIType.Equal(state.AMIType)) || !m.WaitFor.Equal(state.WaitFor) ||
		state.GPUsPerNode.IsNull() && state.GPUProduct.IsNull()
}

func launchTemplateVersions(lts []nodeGroupLaunchTemplateModel) []string {
	var out []string
	for _, lt := range lts {
		out = append(out, lt.Version.ValueString())
	}
	return out
}

// planEffective plans effective_labels and effective_taints from labels,
// taints and gpu_taint; unknown while any of them is.
func (m *nodeGroupModel) planEffective(ctx context.Context) diag.Diagnostics {
	var diags diag.Diagnostics
	if m.Labels.IsUnknown() || anyUnknown(mapValues(m.Labels.Elements())) {
		m.EffectiveLabels = types.MapUnknown(types.StringType)
	} else {
		m.EffectiveLabels = nodeGroupMapValue(effectiveLabels(stringMapOf(m.Labels)), false)
	}
	if m.Taints.IsUnknown() || m.GPUTaint.IsUnknown() || anyUnknown(m.Taints.Elements()) {
		m.EffectiveTaints = types.SetUnknown(nodeGroupTaintObjectType)
		return diags
	}
	taints, d := taintsOf(ctx, m.Taints)
	diags.Append(d...)
	var like []nodeGroupTaintModel
	if !m.Taints.IsNull() {
		diags.Append(m.Taints.ElementsAs(ctx, &like, true)...)
	}
	m.EffectiveTaints, d = taintsValue(ctx, effectiveTaints(taints, m.GPUTaint.ValueBool()), like)
	diags.Append(d...)
	return diags
}

// checkAgainstEC2 reads the instance types' facts (and, when subnet_ids
// are known, their zones and the types' offerings) through the provider's
// cached client, checks them, and plans ami_type's default and the GPU
// facts. It returns false, with no error, when it could not check.
func (r *NodeGroupResource) checkAgainstEC2(ctx context.Context, plan, config *nodeGroupModel, diags *diag.Diagnostics) bool {
	names := stringsOf(ctx, plan.InstanceTypes)
	summary := "checking gpu_node_group against EC2"
	client := r.clients.awsFor(ctx, summary, diags)
	if client == nil {
		return false
	}
	start := time.Now()
	facts, err := client.InstanceTypes(ctx, names)
	var unknown *eks.UnknownInstanceTypesError
	if errors.As(err, &unknown) {
		diags.AddAttributeError(path.Root("instance_types"), "Unknown instance type", "instance_types: "+err.Error())
		return false
	}
	if err != nil {
		diags.AddError(summary, "reading the instance types (EC2 DescribeInstanceTypes): "+err.Error())
		return false
	}
	tflog.Debug(ctx, "read instance types at plan", map[string]any{"types": names, "duration": time.Since(start).String()})
	amiType := ""
	if !config.AMIType.IsNull() && !config.AMIType.IsUnknown() {
		amiType = config.AMIType.ValueString()
	}
	checked, d := checkInstanceTypes(names, facts, amiType, plan.WaitFor.ValueString())
	diags.Append(d...)
	if diags.HasError() {
		return false
	}
	if config.AMIType.IsNull() {
		plan.AMIType = types.StringValue(eks.DefaultAMIType(checked.Architecture))
	}
	plan.setGPUFacts(names, facts)

	subnets := stringsOf(ctx, plan.SubnetIDs)
	if plan.SubnetIDs.IsUnknown() || len(subnets) != len(plan.SubnetIDs.Elements()) {
		return true // zones known at apply; EKS's own check applies then
	}
	start = time.Now()
	zones, err := client.SubnetZones(ctx, subnets)
	var unknownSubnets *eks.UnknownSubnetsError
	if errors.As(err, &unknownSubnets) {
		diags.AddAttributeError(path.Root("subnet_ids"), "Unknown subnet", "subnet_ids: "+err.Error())
		return false
	}
	if err != nil {
		diags.AddError(summary, "reading the subnets' Availability Zones (EC2 DescribeSubnets): "+err.Error())
		return false
	}
	offered, err := client.OfferedZones(ctx, names)
	if err != nil {
		diags.AddError(summary, "reading where the instance types are offered (EC2 DescribeInstanceTypeOfferings): "+err.Error())
		return false
	}
	tflog.Debug(ctx, "read subnet zones and offerings at plan", map[string]any{"duration": time.Since(start).String()})
	diags.Append(checkZones(names, zones, offered)...)
	return !diags.HasError()
}

// anyUnknown says whether any of values, or any attribute of an object
// among them, is unknown.
func anyUnknown(values []attr.Value) bool {
	for _, v := range values {
		if v.IsUnknown() {
			return true
		}
		if o, ok := v.(types.Object); ok && anyUnknown(mapValues(o.Attributes())) {
			return true
		}
	}
	return false
}

func mapValues(m map[string]attr.Value) []attr.Value {
	out := make([]attr.Value, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
