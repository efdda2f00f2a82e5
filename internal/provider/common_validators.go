package provider

import (
	"context"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/labels"
)

// regexValidator rejects strings that are not RE2 regular expressions.
type regexValidator struct{}

func (regexValidator) Description(context.Context) string {
	return "value must be a regular expression (RE2 syntax)"
}
func (v regexValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (regexValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := regexp.Compile(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid regular expression",
			req.Path.String()+" "+quote(req.ConfigValue.ValueString())+" is not a regular expression: "+err.Error()+
				". Use RE2 syntax, e.g. \"H100|A100\"; escape literal dots and brackets.")
	}
}

// labelSelectorValidator rejects strings that are not Kubernetes label selectors.
type labelSelectorValidator struct{}

func (labelSelectorValidator) Description(context.Context) string {
	return "value must be a Kubernetes label selector"
}
func (v labelSelectorValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (labelSelectorValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := labels.Parse(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid label selector",
			req.Path.String()+" "+quote(req.ConfigValue.ValueString())+" is not a label selector: "+err.Error()+
				". Write it as kubectl takes it, e.g. \"nvidia.com/gpu.family=hopper,node.kubernetes.io/instance-type in (p5.48xlarge)\".")
	}
}

// backtickList renders values as "`a`, `b`" for attribute descriptions.
func backtickList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = "`" + v + "`"
	}
	return strings.Join(quoted, ", ")
}

// quote is s in double quotes, as error messages name a value.
func quote(s string) string { return strconv.Quote(s) }
