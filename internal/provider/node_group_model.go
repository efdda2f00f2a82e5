package provider

import (
	"context"
	"maps"
	"slices"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// nodeGroupModel is gpu_node_group's configuration, plan and state.
type nodeGroupModel struct {
	ID                  types.String `tfsdk:"id"`
	ClusterName         types.String `tfsdk:"cluster_name"`
	NodeGroupName       types.String `tfsdk:"node_group_name"`
	NodeGroupNamePrefix types.String `tfsdk:"node_group_name_prefix"`
	NodeRoleARN         types.String `tfsdk:"node_role_arn"`
	SubnetIDs           types.Set    `tfsdk:"subnet_ids"`
	InstanceTypes       types.List   `tfsdk:"instance_types"`
	AMIType             types.String `tfsdk:"ami_type"`
	CapacityType        types.String `tfsdk:"capacity_type"`
	DiskSize            types.Int64  `tfsdk:"disk_size"`
	Labels              types.Map    `tfsdk:"labels"`
	Taints              types.Set    `tfsdk:"taints"`
	GPUTaint            types.Bool   `tfsdk:"gpu_taint"`
	EffectiveLabels     types.Map    `tfsdk:"effective_labels"`
	EffectiveTaints     types.Set    `tfsdk:"effective_taints"`
	ReleaseVersion      types.String `tfsdk:"release_version"`
	Version             types.String `tfsdk:"version"`
	ForceUpdateVersion  types.Bool   `tfsdk:"force_update_version"`
	Tags                types.Map    `tfsdk:"tags"`
	WaitFor             types.String `tfsdk:"wait_for"`

	ARN                   types.String `tfsdk:"arn"`
	Status                types.String `tfsdk:"status"`
	AutoScalingGroupNames types.List   `tfsdk:"autoscaling_group_names"`
	NodeTemplateTags      types.Map    `tfsdk:"node_template_tags"`
	GPUProduct            types.String `tfsdk:"gpu_product"`
	GPUsPerNode           types.Int64  `tfsdk:"gpus_per_node"`
	GPUMemoryMiB          types.Int64  `tfsdk:"gpu_memory_mib"`
	ReadyNodes            types.Int64  `tfsdk:"ready_nodes"`
	AllocatableGPUs       types.Int64  `tfsdk:"allocatable_gpus"`

	Scaling          []nodeGroupScalingModel        `tfsdk:"scaling"`
	UpdateConfig     []nodeGroupUpdateConfigModel   `tfsdk:"update_config"`
	NodeRepairConfig []nodeGroupNodeRepairModel     `tfsdk:"node_repair_config"`
	LaunchTemplate   []nodeGroupLaunchTemplateModel `tfsdk:"launch_template"`
	Timeouts         timeouts.Value                 `tfsdk:"timeouts"`

	CapacityReservation []nodeGroupCapacityModel `tfsdk:"capacity_reservation"` // node_group_capacity*.go
}

type nodeGroupScalingModel struct {
	MinSize     types.Int64 `tfsdk:"min_size"`
	MaxSize     types.Int64 `tfsdk:"max_size"`
	DesiredSize types.Int64 `tfsdk:"desired_size"`
}

type nodeGroupUpdateConfigModel struct {
	MaxUnavailable           types.Int64  `tfsdk:"max_unavailable"`
	MaxUnavailablePercentage types.Int64  `tfsdk:"max_unavailable_percentage"`
	UpdateStrategy           types.String `tfsdk:"update_strategy"`
}

type nodeGroupLaunchTemplateModel struct {
	ID      types.String `tfsdk:"id"`
	Name    types.String `tfsdk:"name"`
	Version types.String `tfsdk:"version"`
}

type nodeGroupTaintModel struct {
	Key    types.String `tfsdk:"key"`
	Value  types.String `tfsdk:"value"`
	Effect types.String `tfsdk:"effect"`
}

// The GPU defaults gpu_node_group adds to what the user writes.
var (
	// nodeGroupGPULabels are the labels every GPU node group gets.
	nodeGroupGPULabels = map[string]string{gpulabels.Present: "true"}
	// nodeGroupGPUTaint is the taint gpu_taint adds, in EKS's form.
	nodeGroupGPUTaint = eks.Taint{Key: gpulabels.TaintKey, Value: "true", Effect: "NO_SCHEDULE"}
)

// nodeGroupID is the resource's ID and import ID.
func nodeGroupID(cluster, name string) string { return cluster + ":" + name }

// describe is how diagnostics name the group.
func (m *nodeGroupModel) describe() string {
	return "(" + nodeGroupID(m.ClusterName.ValueString(), m.NodeGroupName.ValueString()) + ")"
}

// taintsOf is a set of taints; unknown or null elements are skipped.
func taintsOf(ctx context.Context, set types.Set) ([]eks.Taint, diag.Diagnostics) {
	if set.IsNull() || set.IsUnknown() {
		return nil, nil
	}
	var models []nodeGroupTaintModel
	diags := set.ElementsAs(ctx, &models, true)
	var out []eks.Taint
	for _, t := range models {
		if t.Key.IsUnknown() || t.Value.IsUnknown() || t.Effect.IsUnknown() {
			continue
		}
		out = append(out, eks.Taint{Key: t.Key.ValueString(), Value: t.Value.ValueString(), Effect: t.Effect.ValueString()})
	}
	return out, diags
}

// effectiveLabels is labels with the GPU label added; a key the user set wins.
func effectiveLabels(labels map[string]string) map[string]string {
	out := maps.Clone(nodeGroupGPULabels)
	maps.Copy(out, labels)
	return out
}

// effectiveTaints is taints with the GPU taint added when gpuTaint, once.
func effectiveTaints(taints []eks.Taint, gpuTaint bool) []eks.Taint {
	out := append([]eks.Taint(nil), taints...)
	if gpuTaint && !slices.Contains(out, nodeGroupGPUTaint) {
		out = append(out, nodeGroupGPUTaint)
	}
	sortTaints(out)
	return out
}

func sortTaints(ts []eks.Taint) {
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].Key != ts[j].Key {
			return ts[i].Key < ts[j].Key
		}
		return ts[i].Effect < ts[j].Effect
	})
}

// taintsValue is taints as a set value. Each taint with an empty value
// takes the spelling of the same taint in like (null or ""), so that what
// the user wrote stays as written.
func taintsValue(ctx context.Context, taints []eks.Taint, like []nodeGroupTaintModel) (types.Set, diag.Diagnostics) {
	models := make([]nodeGroupTaintModel, 0, len(taints))
	for _, t := range taints {
		value := types.StringValue(t.Value)
		if t.Value == "" {
			value = types.StringNull()
			for _, l := range like {
				if l.Key.ValueString() == t.Key && l.Effect.ValueString() == t.Effect && !l.Value.IsNull() && l.Value.ValueString() == "" {
					value = types.StringValue("")
				}
			}
		}
		models = append(models, nodeGroupTaintModel{Key: types.StringValue(t.Key), Value: value, Effect: types.StringValue(t.Effect)})
	}
	return types.SetValueFrom(ctx, nodeGroupTaintObjectType, models)
}

// stringMapValue is m as a map value; nil is null when nullIfEmpty.
func nodeGroupMapValue(m map[string]string, nullIfEmpty bool) types.Map {
	if len(m) == 0 && nullIfEmpty {
		return types.MapNull(types.StringType)
	}
	elems := make(map[string]attr.Value, len(m))
	for k, v := range m {
		elems[k] = types.StringValue(v)
	}
	return types.MapValueMust(types.StringType, elems)
}

// toSpec is the model as eks takes it: labels and taints with the GPU
// defaults added. Call it on a plan or state whose values are known.
func (m *nodeGroupModel) toSpec(ctx context.Context) (eks.NodeGroupSpec, diag.Diagnostics) {
	taints, diags := taintsOf(ctx, m.Taints)
	labels := effectiveLabels(stringMapOf(m.Labels))
	taints = effectiveTaints(taints, m.GPUTaint.IsNull() || m.GPUTaint.ValueBool())
	// The effective values, once known, are what EKS has (state) or will
	// have (plan), drift included.
	if v := m.EffectiveLabels; !v.IsNull() && !v.IsUnknown() {
		labels = stringMapOf(v)
	}
	if v := m.EffectiveTaints; !v.IsNull() && !v.IsUnknown() {
		var d diag.Diagnostics
		taints, d = taintsOf(ctx, v)
		diags.Append(d...)
	}
	spec := eks.NodeGroupSpec{
		ClusterName:        m.ClusterName.ValueString(),
		Name:               m.NodeGroupName.ValueString(),
		NodeRoleARN:        m.NodeRoleARN.ValueString(),
		SubnetIDs:          stringsOf(ctx, m.SubnetIDs),
		InstanceTypes:      stringsOf(ctx, m.InstanceTypes),
		AMIType:            m.AMIType.ValueString(),
		CapacityType:       m.CapacityType.ValueString(),
		DiskSize:           int32(m.DiskSize.ValueInt64()),
		Labels:             labels,
		Taints:             taints,
		ReleaseVersion:     m.ReleaseVersion.ValueString(),
		Version:            m.Version.ValueString(),
		ForceUpdateVersion: m.ForceUpdateVersion.ValueBool(),
		Tags:               stringMapOf(m.Tags),
	}
	sort.Strings(spec.SubnetIDs)
	if len(m.Scaling) == 1 {
		s := m.Scaling[0]
		spec.Scaling = eks.Scaling{Min: int32(s.MinSize.ValueInt64()), Max: int32(s.MaxSize.ValueInt64()), Desired: int32(s.DesiredSize.ValueInt64())}
	}
	if len(m.UpdateConfig) == 1 {
		u := m.UpdateConfig[0]
		spec.UpdateConfig = &eks.UpdateConfig{MaxUnavailable: int32(u.MaxUnavailable.ValueInt64()), MaxUnavailablePercentage: int32(u.MaxUnavailablePercentage.ValueInt64()),
			UpdateStrategy: updateStrategyOf(u.UpdateStrategy)}
	}
	spec.NodeRepair = nodeRepairSpec(m.NodeRepairConfig)
	if len(m.LaunchTemplate) == 1 {
		// EKS takes the template by ID or by name, never both: once the ID
		// is known (from EKS, after create) it is the one sent.
		lt := m.LaunchTemplate[0]
		spec.LaunchTemplate = &eks.LaunchTemplate{ID: lt.ID.ValueString(), Version: lt.Version.ValueString()}
		if spec.LaunchTemplate.ID == "" {
			spec.LaunchTemplate.Name = lt.Name.ValueString()
		}
	}
	return spec, diags
}

// setFromLive records what EKS reports in the state. Labels and taints
// keep what the user wrote: a GPU default the user did not write is shown
// in effective_labels / effective_taints only. Blocks the user left out
// (update_config) stay out, whatever EKS's defaults.
func (m *nodeGroupModel) setFromLive(ctx context.Context, live eks.NodeGroup) diag.Diagnostics {
	var diags diag.Diagnostics
	m.ID = types.StringValue(nodeGroupID(live.ClusterName, live.Name))
	m.ClusterName = types.StringValue(live.ClusterName)
	m.NodeGroupName = types.StringValue(live.Name)
	m.NodeRoleARN = types.StringValue(live.NodeRoleARN)
	m.SubnetIDs = stringSetValue(live.SubnetIDs)
	m.InstanceTypes = stringListValue(live.InstanceTypes)
	m.AMIType = types.StringValue(live.AMIType)
	if live.CapacityType != "" {
		m.CapacityType = types.StringValue(live.CapacityType)
	}
	if live.DiskSize != 0 || m.DiskSize.IsUnknown() {
		m.DiskSize = types.Int64Value(int64(live.DiskSize))
	}
	m.ReleaseVersion = types.StringValue(live.ReleaseVersion)
	m.Version = types.StringValue(live.Version)
	m.ARN = types.StringValue(live.ARN)
	m.Status = types.StringValue(live.Status)
	m.AutoScalingGroupNames = stringListValue(live.AutoScalingGroupNames)
	m.Tags = nodeGroupMapValue(live.Tags, m.Tags.IsNull())

	// Labels: the GPU label is a default unless the user wrote it.
	userLabels := stringMapOf(m.Labels)
	labels := map[string]string{}
	for k, v := range live.Labels {
		if def, ok := nodeGroupGPULabels[k]; ok && v == def {
			if _, written := userLabels[k]; !written {
				continue
			}
		}
		labels[k] = v
	}
	m.Labels = nodeGroupMapValue(labels, m.Labels.IsNull())
	m.EffectiveLabels = nodeGroupMapValue(live.Labels, false)

	// Taints: the GPU taint is a default while gpu_taint is on, unless the user wrote it.
	var like []nodeGroupTaintModel
	if !m.Taints.IsNull() && !m.Taints.IsUnknown() {
		diags.Append(m.Taints.ElementsAs(ctx, &like, true)...)
	}
	userTaints, d := taintsOf(ctx, m.Taints)
	diags.Append(d...)
	gpuTaint := m.GPUTaint.IsNull() || m.GPUTaint.ValueBool()
	var taints []eks.Taint
	for _, t := range live.Taints {
		if t == nodeGroupGPUTaint && gpuTaint && !slices.Contains(userTaints, t) {
			continue
		}
		taints = append(taints, t)
	}
	sortTaints(taints)
	if len(taints) == 0 && m.Taints.IsNull() {
		m.Taints = types.SetNull(nodeGroupTaintObjectType)
	} else {
		m.Taints, d = taintsValue(ctx, taints, like)
		diags.Append(d...)
	}
	all := append([]eks.Taint(nil), live.Taints...)
	sortTaints(all)
	m.EffectiveTaints, d = taintsValue(ctx, all, like)
	diags.Append(d...)

	m.setRepairFromLive(live, len(m.Scaling) == 0) // scaling is required: none is an import
	s := live.Scaling
	m.Scaling = []nodeGroupScalingModel{{
		MinSize: types.Int64Value(int64(s.Min)), MaxSize: types.Int64Value(int64(s.Max)), DesiredSize: types.Int64Value(int64(s.Desired)),
	}}
	m.setLaunchTemplateFromLive(live) // node_group_capacity.go
	return diags
}

func int64OrNull(v int32) types.Int64 {
	if v == 0 {
		return types.Int64Null()
	}
	return types.Int64Value(int64(v))
}

// setGPUFacts records the instance types' NVIDIA GPU: product, count and
// memory when all types agree on it, null where they differ.
func (m *nodeGroupModel) setGPUFacts(names []string, facts map[string]eks.InstanceType) {
	m.GPUProduct, m.GPUsPerNode, m.GPUMemoryMiB = types.StringNull(), types.Int64Null(), types.Int64Null()
	var product string
	var count, memory int64
	for i, name := range names {
		gpu, ok := facts[name].NVIDIAGPUs()
		if !ok {
			return
		}
		if i == 0 {
			product, count, memory = gpu.Name, int64(gpu.Count), gpu.MemoryMiB
			continue
		}
		if gpu.Name != product {
			product = ""
		}
		if int64(gpu.Count) != count {
			count = -1
		}
		if gpu.MemoryMiB != memory {
			memory = -1
		}
	}
	if product != "" {
		m.GPUProduct = types.StringValue(product)
	}
	if count >= 0 {
		m.GPUsPerNode = types.Int64Value(count)
	}
	if memory >= 0 {
		m.GPUMemoryMiB = types.Int64Value(memory)
	}
}

// planNodeTemplateTags plans node_template_tags from the effective labels
// and taints and the GPUs per node; unknown while any of them is.
func (m *nodeGroupModel) planNodeTemplateTags(ctx context.Context) diag.Diagnostics {
	if m.EffectiveLabels.IsUnknown() || m.EffectiveTaints.IsUnknown() || m.GPUsPerNode.IsUnknown() {
		m.NodeTemplateTags = types.MapUnknown(types.StringType)
		return nil
	}
	taints, diags := taintsOf(ctx, m.EffectiveTaints)
	tags := eks.NodeTemplateTags(stringMapOf(m.EffectiveLabels), taints, int(m.GPUsPerNode.ValueInt64()))
	m.NodeTemplateTags = nodeGroupMapValue(tags, false)
	return diags
}
