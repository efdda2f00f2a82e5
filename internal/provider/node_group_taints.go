package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

// The rules of a node group's taint keys and values, checked at plan: EKS's
// API reference limits a key to 1..63 characters and a value to 63
// (API_Taint), its User Guide (node-taints-managed-node-groups.html) and
// Kubernetes (a taint key is a qualified name, a value a label value, as
// the kubelet checks them when the node registers) the characters.
var (
	_ validator.String = taintKeyValidator{}
	_ validator.String = taintValueValidator{}
)

type taintKeyValidator struct{}

func (taintKeyValidator) Description(context.Context) string {
	return "a Kubernetes qualified name of at most 63 characters in all: an optional DNS subdomain prefix and '/', then " +
		"letters, digits, '-', '_' and '.', beginning and ending with a letter or digit"
}
func (v taintKeyValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v taintKeyValidator) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	key := req.ConfigValue.ValueString()
	errs := validation.IsQualifiedName(key)
	if len(key) > 63 {
		errs = append(errs, fmt.Sprintf("EKS takes at most 63 characters, prefix included (this one has %d)", len(key)))
	}
	if len(errs) > 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid taint key",
			fmt.Sprintf("%s: taint key %q is not valid: %s. A taint key must be %s, e.g. \"dedicated\" or \"example.com/gpu\"; "+
				"EKS refuses others (InvalidParameterException) and the kubelet could not register the node with it.",
				req.Path, key, strings.Join(errs, "; "), v.Description(ctx)))
	}
}

type taintValueValidator struct{}

func (taintValueValidator) Description(context.Context) string {
	return "empty, or at most 63 letters, digits, '-', '_' and '.', beginning and ending with a letter or digit"
}
func (v taintValueValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v taintValueValidator) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	value := req.ConfigValue.ValueString()
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid taint value",
			fmt.Sprintf("%s: taint value %q is not valid: %s. A taint value must be %s.", req.Path, value, strings.Join(errs, "; "), v.Description(ctx)))
	}
}

// validateNodeGroupTaintCount counts what EKS would be sent, the GPU taint
// gpu_taint adds included, against EKS's limit.
func validateNodeGroupTaintCount(taints []eks.Taint, gpuTaint bool) diag.Diagnostics {
	var diags diag.Diagnostics
	total := len(effectiveTaints(taints, gpuTaint))
	if total <= eks.MaxTaintsPerNodeGroup {
		return diags
	}
	g := nodeGroupGPUTaint
	detail := fmt.Sprintf("taints has %d taints", len(taints))
	if total > len(taints) {
		detail += fmt.Sprintf(" and gpu_taint adds %s=%s:%s: %d", g.Key, g.Value, g.Effect, total)
	}
	diags.AddAttributeError(path.Root("taints"), "Too many taints",
		fmt.Sprintf("%s, and EKS allows at most %d per node group (InvalidParameterException at apply). Remove %d taints, "+
			"or set gpu_taint = false to leave out the GPU taint the provider adds.", detail, eks.MaxTaintsPerNodeGroup, total-eks.MaxTaintsPerNodeGroup))
	return diags
}

// validateNodeTemplateTagCount counts the cluster-autoscaler node-template
// tags the provider puts on the group's Auto Scaling group (one per
// effective label, one per effective taint key, one for the GPUs) against
// the room Auto Scaling's 50-tag quota leaves beside EKS's own tags: past
// it, tagging fails after EKS made the group, so it is refused here.
func validateNodeTemplateTagCount(labels map[string]string, taints []eks.Taint, gpuTaint bool) diag.Diagnostics {
	var diags diag.Diagnostics
	allLabels := effectiveLabels(labels)
	tags := eks.NodeTemplateTags(allLabels, effectiveTaints(taints, gpuTaint), 1)
	if len(tags) <= eks.NodeTemplateTagRoom {
		return diags
	}
	diags.AddAttributeError(path.Root("labels"), "Too many labels and taints for the Auto Scaling group's tags",
		fmt.Sprintf("the provider tags the node group's Auto Scaling group with one cluster-autoscaler node-template tag per label "+
			"(%d with the GPU label), per taint key (%d with the GPU taint) and one for the GPUs: %d tags, and Auto Scaling allows %d per group, "+
			"of which EKS uses %d. Remove %d labels or taints (gpu_taint = false leaves out the GPU taint).",
			len(allLabels), len(tags)-len(allLabels)-1, len(tags), eks.MaxAutoScalingGroupTags,
			eks.EKSAutoScalingGroupTags, len(tags)-eks.NodeTemplateTagRoom))
	return diags
}
