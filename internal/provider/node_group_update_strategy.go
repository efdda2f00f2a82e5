package provider

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

// nodeGroupDefaultUpdateStrategy is EKS's strategy when none is set.
const nodeGroupDefaultUpdateStrategy = "DEFAULT"

// nodeGroupUpdateStrategyAttribute is update_config's update_strategy
// (API_NodegroupUpdateConfig; EKS User Guide, "Managed node update behavior").
func nodeGroupUpdateStrategyAttribute() schema.StringAttribute {
	return schema.StringAttribute{
		Optional: true,
		Computed: true,
		MarkdownDescription: "How a version or launch template update replaces nodes. Valid values are: " + backtickList(eks.UpdateStrategies) +
			". `DEFAULT` launches new nodes first and then drains and terminates the old ones, so the Auto Scaling group grows beyond " +
			"`desired_size` for the update. `MINIMAL` drains and terminates old nodes first and launches their replacements after, never " +
			"growing the group: AWS suggests it where capacity or cost is constrained, as with GPU instances, and it is the one to use for a " +
			"group in a capacity reservation or capacity block, which holds no instances to surge into. Unset, what EKS reports " +
			"(`DEFAULT` for a new group); removing it keeps the current strategy. Changes in place.",
		Validators:    []validator.String{stringvalidator.OneOf(eks.UpdateStrategies...)},
		PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
	}
}

// updateStrategyOf is the strategy to send: "" when unset or unknown.
func updateStrategyOf(v types.String) string {
	if v.IsNull() || v.IsUnknown() {
		return ""
	}
	return v.ValueString()
}

// updateStrategyValue is what EKS reports, EKS's default when it reports none.
func updateStrategyValue(s string) types.String {
	if s == "" {
		s = nodeGroupDefaultUpdateStrategy
	}
	return types.StringValue(s)
}
