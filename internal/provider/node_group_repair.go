package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

// gpu_node_group's node_repair_config: EKS's NodeRepairConfig, with the
// limits of the EKS API reference (API_NodeRepairConfig: counts at least
// 1, percentages 1 to 100, a count and the percentage of one bound never
// both; API_NodeRepairConfigOverrides: "If you use this, you must specify
// all the values", minRepairWaitTimeMins at least 1, repairAction one of
// the SDK's RepairAction values).

type nodeGroupNodeRepairModel struct {
	Enabled                             types.Bool                     `tfsdk:"enabled"`
	MaxParallelNodesRepairedCount       types.Int64                    `tfsdk:"max_parallel_nodes_repaired_count"`
	MaxParallelNodesRepairedPercentage  types.Int64                    `tfsdk:"max_parallel_nodes_repaired_percentage"`
	MaxUnhealthyNodeThresholdCount      types.Int64                    `tfsdk:"max_unhealthy_node_threshold_count"`
	MaxUnhealthyNodeThresholdPercentage types.Int64                    `tfsdk:"max_unhealthy_node_threshold_percentage"`
	Overrides                           []nodeGroupRepairOverrideModel `tfsdk:"override"`
}

type nodeGroupRepairOverrideModel struct {
	NodeMonitoringCondition types.String `tfsdk:"node_monitoring_condition"`
	NodeUnhealthyReason     types.String `tfsdk:"node_unhealthy_reason"`
	MinRepairWaitTimeMins   types.Int64  `tfsdk:"min_repair_wait_time_mins"`
	RepairAction            types.String `tfsdk:"repair_action"`
}

func nodeGroupNodeRepairBlock() schema.ListNestedBlock {
	count := func(what string) schema.Int64Attribute {
		return schema.Int64Attribute{
			CustomType: wholeNumberType{}, Optional: true, MarkdownDescription: what + ", at least 1.",
			Validators: []validator.Int64{int64validator.AtLeast(1)},
		}
	}
	percentage := func(what string) schema.Int64Attribute {
		return schema.Int64Attribute{
			CustomType: wholeNumberType{}, Optional: true, MarkdownDescription: what + ", 1 to 100.",
			Validators: []validator.Int64{int64validator.Between(1, 100)},
		}
	}
	return schema.ListNestedBlock{
		MarkdownDescription: "EKS node auto repair: EKS watches the conditions the node monitoring agent reports (e.g. " +
			"`AcceleratedHardwareReady` for NVIDIA XID errors) and repairs unhealthy nodes. Of `max_parallel_nodes_repaired_count` and " +
			"`_percentage`, and of `max_unhealthy_node_threshold_count` and `_percentage`, set one at most. Unset, EKS's default " +
			"(disabled) and the block stays out of the state; when set, it is read back from EKS, and import reads it. Changes in place.",
		Validators: []validator.List{listvalidator.SizeAtMost(1)},
		NestedObject: schema.NestedBlockObject{
			Attributes: map[string]schema.Attribute{
				"enabled":                                 schema.BoolAttribute{Required: true, MarkdownDescription: "Turn node auto repair on."},
				"max_parallel_nodes_repaired_count":       count("Most unhealthy nodes repaired at once, as a count"),
				"max_parallel_nodes_repaired_percentage":  percentage("Most unhealthy nodes repaired at once, as a percentage of the unhealthy nodes"),
				"max_unhealthy_node_threshold_count":      count("Repairs stop when more nodes than this are unhealthy, as a count"),
				"max_unhealthy_node_threshold_percentage": percentage("Repairs stop when more nodes than this are unhealthy, as a percentage of the group"),
			},
			Blocks: map[string]schema.Block{
				"override": schema.ListNestedBlock{
					MarkdownDescription: "A repair rule for one condition and reason; EKS needs all four values of each.",
					NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
						"node_monitoring_condition": schema.StringAttribute{Required: true,
							MarkdownDescription: "Unhealthy node condition the node monitoring agent reports, e.g. `AcceleratedHardwareReady`, `KernelReady`.",
							Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}},
						"node_unhealthy_reason": schema.StringAttribute{Required: true,
							MarkdownDescription: "Reason the agent reports with it, e.g. `NvidiaXID31Error`.",
							Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}},
						"min_repair_wait_time_mins": schema.Int64Attribute{CustomType: wholeNumberType{}, Required: true,
							MarkdownDescription: "Minutes to wait before repairing a node in this state, at least 1.",
							Validators:          []validator.Int64{int64validator.AtLeast(1)}},
						"repair_action": schema.StringAttribute{Required: true,
							MarkdownDescription: "Valid values are: " + backtickList(eks.RepairActions) + ".",
							Validators:          []validator.String{stringvalidator.OneOf(eks.RepairActions...)}},
					}},
				},
			},
		},
	}
}

// validateNodeRepair refuses both the count and the percentage of one bound.
func validateNodeRepair(blocks []nodeGroupNodeRepairModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if len(blocks) != 1 {
		return diags
	}
	r := blocks[0]
	for _, p := range []struct {
		name        string
		count, pctg types.Int64
	}{
		{"max_parallel_nodes_repaired", r.MaxParallelNodesRepairedCount, r.MaxParallelNodesRepairedPercentage},
		{"max_unhealthy_node_threshold", r.MaxUnhealthyNodeThresholdCount, r.MaxUnhealthyNodeThresholdPercentage},
	} {
		if !p.count.IsNull() && !p.pctg.IsNull() {
			diags.AddAttributeError(path.Root("node_repair_config").AtListIndex(0).AtName(p.name+"_count"), "Invalid gpu_node_group node_repair_config",
				fmt.Sprintf("node_repair_config sets both %[1]s_count and %[1]s_percentage: EKS takes one of them (InvalidParameterException). Keep one", p.name))
		}
	}
	return diags
}

// nodeRepairSpec is the block as eks takes it; nil when the block is absent.
func nodeRepairSpec(blocks []nodeGroupNodeRepairModel) *eks.NodeRepairConfig {
	if len(blocks) != 1 {
		return nil
	}
	r := blocks[0]
	out := &eks.NodeRepairConfig{
		Enabled:                             r.Enabled.ValueBool(),
		MaxParallelNodesRepairedCount:       int32(r.MaxParallelNodesRepairedCount.ValueInt64()),
		MaxParallelNodesRepairedPercentage:  int32(r.MaxParallelNodesRepairedPercentage.ValueInt64()),
		MaxUnhealthyNodeThresholdCount:      int32(r.MaxUnhealthyNodeThresholdCount.ValueInt64()),
		MaxUnhealthyNodeThresholdPercentage: int32(r.MaxUnhealthyNodeThresholdPercentage.ValueInt64()),
	}
	for _, o := range r.Overrides {
		out.Overrides = append(out.Overrides, eks.NodeRepairOverride{
			NodeMonitoringCondition: o.NodeMonitoringCondition.ValueString(),
			NodeUnhealthyReason:     o.NodeUnhealthyReason.ValueString(),
			MinRepairWaitTimeMins:   int32(o.MinRepairWaitTimeMins.ValueInt64()),
			RepairAction:            o.RepairAction.ValueString(),
		})
	}
	return out
}

// setRepairFromLive records EKS's update strategy and repair config: into
// the blocks the user wrote, and on import (imported) into blocks made for
// them when EKS reports something other than its defaults (one node at a
// time, DEFAULT; repair disabled).
func (m *nodeGroupModel) setRepairFromLive(live eks.NodeGroup, imported bool) {
	if u := live.UpdateConfig; u != nil {
		nonDefault := u.MaxUnavailable != 1 || u.MaxUnavailablePercentage != 0 || (u.UpdateStrategy != "" && u.UpdateStrategy != nodeGroupDefaultUpdateStrategy)
		if len(m.UpdateConfig) > 0 || (imported && nonDefault) {
			m.UpdateConfig = []nodeGroupUpdateConfigModel{{
				MaxUnavailable:           int64OrNull(u.MaxUnavailable),
				MaxUnavailablePercentage: int64OrNull(u.MaxUnavailablePercentage),
				UpdateStrategy:           updateStrategyValue(u.UpdateStrategy),
			}}
		}
	}
	r := live.NodeRepair
	if len(m.NodeRepairConfig) == 0 && (!imported || r.Equal(nil)) {
		return
	}
	if r == nil {
		r = &eks.NodeRepairConfig{}
	}
	block := nodeGroupNodeRepairModel{
		Enabled:                             types.BoolValue(r.Enabled),
		MaxParallelNodesRepairedCount:       int64OrNull(r.MaxParallelNodesRepairedCount),
		MaxParallelNodesRepairedPercentage:  int64OrNull(r.MaxParallelNodesRepairedPercentage),
		MaxUnhealthyNodeThresholdCount:      int64OrNull(r.MaxUnhealthyNodeThresholdCount),
		MaxUnhealthyNodeThresholdPercentage: int64OrNull(r.MaxUnhealthyNodeThresholdPercentage),
	}
	for _, o := range r.Overrides {
		block.Overrides = append(block.Overrides, nodeGroupRepairOverrideModel{
			NodeMonitoringCondition: types.StringValue(o.NodeMonitoringCondition),
			NodeUnhealthyReason:     types.StringValue(o.NodeUnhealthyReason),
			MinRepairWaitTimeMins:   types.Int64Value(int64(o.MinRepairWaitTimeMins)),
			RepairAction:            types.StringValue(o.RepairAction),
		})
	}
	m.NodeRepairConfig = []nodeGroupNodeRepairModel{block}
}
