package provider

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Valid toleration operators and taint effects, for the schema and its docs.
var (
	tolerationOperators = []string{"Exists", "Equal"}
	tolerationEffects   = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}
)

// tolerationModel is one element of a `tolerations` list attribute, as
// gpu_device_plugin and gpu_workload both take it.
type tolerationModel struct {
	Key               types.String `tfsdk:"key"`
	Operator          types.String `tfsdk:"operator"`
	Value             types.String `tfsdk:"value"`
	Effect            types.String `tfsdk:"effect"`
	TolerationSeconds types.Int64  `tfsdk:"toleration_seconds"`
}

// tolerationObjectType is the Terraform type of a tolerationModel.
var tolerationObjectType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"key": types.StringType, "operator": types.StringType, "value": types.StringType,
	"effect": types.StringType, "toleration_seconds": types.Int64Type,
}}

// tolerationAttributes is the schema of one toleration, as in a pod spec.
func tolerationAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"key": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Taint key to tolerate; with operator `Exists` and no key, every taint.",
		},
		"operator": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Valid values are: " + backtickList(tolerationOperators) + ". Kubernetes treats unset as `Equal`.",
			Validators:          []validator.String{stringvalidator.OneOf(tolerationOperators...)},
		},
		"value": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Taint value to match with operator `Equal`.",
		},
		"effect": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Taint effect to tolerate; all when unset. Valid values are: " + backtickList(tolerationEffects) + ".",
			Validators:          []validator.String{stringvalidator.OneOf(tolerationEffects...)},
		},
		"toleration_seconds": schema.Int64Attribute{
			Optional:            true,
			MarkdownDescription: "With effect `NoExecute`, how long the pod stays bound after the taint appears; forever when unset.",
			Validators:          []validator.Int64{int64validator.AtLeast(0)},
		},
	}
}
