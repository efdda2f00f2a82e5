package provider

import (
	"context"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

var _ validator.List = includeLabelsValidator{}

// includeLabelsAll is the include_labels entry that keeps every label.
const includeLabelsAll = "*"

// includeLabelsHint is the fix an include_labels error suggests.
const includeLabelsHint = `Give a label key as it is on the node, e.g. "nvidia.com/gpu.product"; a prefix ending in "*", ` +
	`e.g. "nvidia.com/*" or "feature.node.kubernetes.io/pci-*"; or "*" alone for every label.`

// includeLabelsValidator checks each include_labels entry: a label key
// (Kubernetes' qualified-name syntax, apimachinery's
// validation.IsQualifiedName, which the API server applies to label keys:
// https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set),
// a prefix of one followed by "*", or "*" alone.
type includeLabelsValidator struct{}

func (includeLabelsValidator) Description(context.Context) string {
	return `each entry must be a Kubernetes label key, a label-key prefix followed by "*", or "*"`
}
func (v includeLabelsValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (includeLabelsValidator) ValidateList(_ context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for i, elem := range req.ConfigValue.Elements() {
		s, ok := elem.(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			continue
		}
		if problem := includeLabelsEntryProblem(s.ValueString()); problem != "" {
			at := req.Path.AtListIndex(i)
			resp.Diagnostics.AddAttributeError(at, "Invalid include_labels entry",
				"include_labels["+strconv.Itoa(i)+"] "+quote(s.ValueString())+" "+problem+". "+includeLabelsHint)
		}
	}
}

// includeLabelsEntryProblem says what is wrong with one include_labels
// entry, or "" when it is fine.
func includeLabelsEntryProblem(entry string) string {
	if entry == includeLabelsAll {
		return ""
	}
	key := entry
	if prefix, ok := strings.CutSuffix(entry, "*"); ok {
		if prefix == "" || strings.Contains(prefix, "*") {
			return `has "*" other than once at the end`
		}
		// A prefix is fine when some key starting with it is: complete it
		// with one name character and check that key.
		key = prefix + "x"
	} else if strings.Contains(entry, "*") {
		return `has "*" other than at the end`
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return "is not a label key: " + strings.Join(errs, "; ")
	}
	return ""
}

// inventoryLabelKeep turns include_labels into what kube.ListInventory
// keeps. Entries are valid (includeLabelsValidator ran at plan).
func inventoryLabelKeep(ctx context.Context, includeLabels types.List) kube.LabelKeep {
	var keep kube.LabelKeep
	for _, entry := range stringsOf(ctx, includeLabels) {
		switch prefix, isPrefix := strings.CutSuffix(entry, "*"); {
		case entry == includeLabelsAll:
			keep.All = true
		case isPrefix:
			keep.Prefixes = append(keep.Prefixes, prefix)
		default:
			keep.Keys = append(keep.Keys, entry)
		}
	}
	return keep
}

// kubernetesOnlyAttributes are gpu_inventory's top-level arguments that
// apply with source = "kubernetes" only.
var kubernetesOnlyAttributes = []string{"include_labels", "include_nodes"}

// validateKubernetesOnly refuses include_labels and include_nodes with
// another source, where they would be silently ignored.
func (m *inventoryModel) validateKubernetesOnly() diag.Diagnostics {
	var diags diag.Diagnostics
	if m.Source.IsUnknown() || m.Source.IsNull() || m.Source.ValueString() == "kubernetes" {
		return diags
	}
	set := map[string]bool{"include_labels": !m.IncludeLabels.IsNull(), "include_nodes": !m.IncludeNodes.IsNull()}
	for _, name := range kubernetesOnlyAttributes {
		if set[name] {
			diags.AddAttributeError(path.Root(name), "Invalid gpu_inventory",
				name+" shapes the nodes of source = \"kubernetes\" only; with source = \""+m.Source.ValueString()+"\" remove it")
		}
	}
	return diags
}
