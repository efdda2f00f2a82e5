package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

// This file holds gpu_node_group's checks across attributes that need no
// API: they run in ValidateConfig, before the provider is configured. The
// checks against EC2's facts are in node_group_plan_checks.go.

// validate checks the configuration as written; unknown values skip the
// checks that need them.
func (m *nodeGroupModel) validate(ctx context.Context) diag.Diagnostics {
	var diags diag.Diagnostics
	diags.Append(m.validateScaling()...)
	diags.Append(m.validateCapacity()...) // node_group_capacity.go
	if ami := m.AMIType; !ami.IsUnknown() && ami.ValueString() == eks.AMITypeCustom && len(m.LaunchTemplate) == 0 {
		diags.AddAttributeError(path.Root("ami_type"), "Invalid gpu_node_group",
			`ami_type "CUSTOM" takes its AMI from a launch template: add a launch_template block (id or name, and version), `+
				"or pick an NVIDIA AMI type ("+backtickList(nodeGroupAMITypes[:len(nodeGroupAMITypes)-1])+")")
	}
	if len(m.LaunchTemplate) > 0 && !m.DiskSize.IsNull() {
		diags.AddAttributeError(path.Root("disk_size"), "Invalid gpu_node_group",
			"disk_size conflicts with launch_template: EKS fails the node group when both set the disk. "+
				"Set the root volume size in the launch template's block device mappings, and remove disk_size")
	}
	if len(m.LaunchTemplate) == 1 {
		lt := m.LaunchTemplate[0]
		if !lt.ID.IsUnknown() && !lt.Name.IsUnknown() && lt.ID.IsNull() == lt.Name.IsNull() {
			diags.AddAttributeError(path.Root("launch_template").AtListIndex(0), "Invalid gpu_node_group launch_template",
				"launch_template takes exactly one of id and name (EKS refuses both, and needs one): keep id = \"lt-...\" or name")
		}
	}
	if len(m.UpdateConfig) == 1 {
		u := m.UpdateConfig[0]
		if !u.MaxUnavailable.IsUnknown() && !u.MaxUnavailablePercentage.IsUnknown() && u.MaxUnavailable.IsNull() == u.MaxUnavailablePercentage.IsNull() {
			diags.AddAttributeError(path.Root("update_config").AtListIndex(0), "Invalid gpu_node_group update_config",
				"update_config takes exactly one of max_unavailable (nodes) and max_unavailable_percentage: set one, or remove the block for EKS's default of 1 node")
		}
	}
	taints, d := taintsOf(ctx, m.Taints)
	diags.Append(d...)
	gpuTaint := m.GPUTaint.IsNull() || m.GPUTaint.ValueBool() || m.GPUTaint.IsUnknown()
	diags.Append(validateNodeGroupTaints(taints, gpuTaint)...)
	if !m.Taints.IsUnknown() && !anyUnknown(m.Taints.Elements()) {
		diags.Append(validateNodeGroupTaintCount(taints, gpuTaint)...)
		if !m.Labels.IsUnknown() && !anyUnknown(slices.Collect(maps.Values(m.Labels.Elements()))) {
			diags.Append(validateNodeTemplateTagCount(stringMapOf(m.Labels), taints, gpuTaint)...)
		}
	}
	diags.Append(validateNodeRepair(m.NodeRepairConfig)...)
	return diags
}

// validateScaling checks min_size <= desired_size <= max_size.
func (m *nodeGroupModel) validateScaling() diag.Diagnostics {
	var diags diag.Diagnostics
	if len(m.Scaling) != 1 {
		return diags
	}
	s := m.Scaling[0]
	at := path.Root("scaling").AtListIndex(0)
	if s.MinSize.IsUnknown() || s.MaxSize.IsUnknown() {
		return diags
	}
	lo, hi := s.MinSize.ValueInt64(), s.MaxSize.ValueInt64()
	if !s.MinSize.IsNull() && !s.MaxSize.IsNull() && lo > hi {
		diags.AddAttributeError(at.AtName("min_size"), "Invalid gpu_node_group scaling",
			fmt.Sprintf("scaling min_size %d is more than max_size %d: lower min_size or raise max_size", lo, hi))
		return diags
	}
	if d := s.DesiredSize; !d.IsNull() && !d.IsUnknown() && (d.ValueInt64() < lo || d.ValueInt64() > hi) {
		diags.AddAttributeError(at.AtName("desired_size"), "Invalid gpu_node_group scaling",
			fmt.Sprintf("scaling desired_size %d is outside min_size %d .. max_size %d: EKS rejects it (InvalidParameterException). "+
				"Set desired_size between them, or move the bounds", d.ValueInt64(), lo, hi))
	}
	return diags
}

// validateNodeGroupTaints refuses two taints of one key and effect, which
// Kubernetes refuses on a node, including one that clashes with the GPU
// taint gpu_taint adds.
func validateNodeGroupTaints(taints []eks.Taint, gpuTaint bool) diag.Diagnostics {
	var diags diag.Diagnostics
	seen := map[[2]string]string{}
	for _, t := range taints {
		k := [2]string{t.Key, t.Effect}
		if v, dup := seen[k]; dup {
			diags.AddAttributeError(path.Root("taints"), "Invalid gpu_node_group taints",
				fmt.Sprintf("taints has two taints with key %q and effect %s (values %q and %q): a node takes one per key and effect; keep one",
					t.Key, t.Effect, v, t.Value))
		}
		seen[k] = t.Value
		g := nodeGroupGPUTaint
		if gpuTaint && t.Key == g.Key && t.Effect == g.Effect && t.Value != g.Value {
			diags.AddAttributeError(path.Root("taints"), "Invalid gpu_node_group taints",
				fmt.Sprintf("taints has %s=%s:%s, and gpu_taint adds %s=%s:%s, the same key and effect: set gpu_taint = false to write your own GPU taint",
					t.Key, t.Value, t.Effect, g.Key, g.Value, g.Effect))
		}
	}
	return diags
}
