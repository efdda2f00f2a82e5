package provider

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
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
	"effect": types.StringType, "toleration_seconds": wholeNumberType{},
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
			CustomType:          wholeNumberType{},
			Optional:            true,
			MarkdownDescription: "With effect `NoExecute`, how long the pod stays bound after the taint appears; forever when unset.",
			Validators:          []validator.Int64{int64validator.AtLeast(0)},
		},
	}
}

// tolerationsToKube is the one conversion of toleration models into pod
// spec tolerations; tolerationModelsFrom is its inverse.
func tolerationsToKube(models []tolerationModel) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range models {
		out = append(out, corev1.Toleration{
			Key:               t.Key.ValueString(),
			Operator:          corev1.TolerationOperator(t.Operator.ValueString()),
			Value:             t.Value.ValueString(),
			Effect:            corev1.TaintEffect(t.Effect.ValueString()),
			TolerationSeconds: t.TolerationSeconds.ValueInt64Pointer(),
		})
	}
	return out
}

// tolerationModelsFrom reads pod spec tolerations back; unset fields are null.
func tolerationModelsFrom(tolerations []corev1.Toleration) []tolerationModel {
	var out []tolerationModel
	for _, t := range tolerations {
		out = append(out, tolerationModel{
			Key:               stringOrNull(t.Key),
			Operator:          stringOrNull(string(t.Operator)),
			Value:             stringOrNull(t.Value),
			Effect:            stringOrNull(string(t.Effect)),
			TolerationSeconds: types.Int64PointerValue(t.TolerationSeconds),
		})
	}
	return out
}

// tolerationsListValue is tolerations as a `tolerations` list attribute
// value: empty, never null, when there are none.
func tolerationsListValue(tolerations []corev1.Toleration) types.List {
	models := tolerationModelsFrom(tolerations)
	elems := make([]attr.Value, 0, len(models))
	for _, t := range models {
		elems = append(elems, types.ObjectValueMust(tolerationObjectType.AttrTypes, map[string]attr.Value{
			"key": t.Key, "operator": t.Operator, "value": t.Value, "effect": t.Effect, "toleration_seconds": t.TolerationSeconds,
		}))
	}
	return types.ListValueMust(tolerationObjectType, elems)
}
