package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
)

var (
	_ validator.String = dns1123LabelValidator{}
	_ validator.String = dns1123SubdomainValidator{}
	_ validator.String = quantityValidator{}
	_ validator.Map    = labelsValidator{}
	_ validator.Map    = annotationsValidator{}
	_ validator.Map    = envNamesValidator{}
)

// dns1123LabelValidator accepts RFC 1123 labels, as Kubernetes requires of
// namespace, container and volume names: at most 63 lowercase alphanumerics
// or '-', starting and ending with an alphanumeric.
type dns1123LabelValidator struct{}

func (dns1123LabelValidator) Description(context.Context) string {
	return "value must be a DNS-1123 label: at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit"
}
func (v dns1123LabelValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (dns1123LabelValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if errs := validation.IsDNS1123Label(req.ConfigValue.ValueString()); len(errs) > 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Kubernetes name",
			req.Path.String()+" "+quote(req.ConfigValue.ValueString())+" is not a DNS-1123 label: "+strings.Join(errs, "; ")+
				". Use lowercase letters, digits and '-', e.g. \"gpu-train\".")
	}
}

// dns1123SubdomainValidator accepts RFC 1123 subdomains, as Kubernetes
// requires of most object names: at most 253 characters of DNS-1123 labels
// joined by '.'.
type dns1123SubdomainValidator struct{}

func (dns1123SubdomainValidator) Description(context.Context) string {
	return "value must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters"
}
func (v dns1123SubdomainValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (dns1123SubdomainValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if errs := validation.IsDNS1123Subdomain(req.ConfigValue.ValueString()); len(errs) > 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Kubernetes name",
			req.Path.String()+" "+quote(req.ConfigValue.ValueString())+" is not a DNS-1123 subdomain: "+strings.Join(errs, "; ")+
				". Use lowercase letters, digits, '-' and '.', e.g. \"gpu-train\".")
	}
}

// quantityValidator accepts Kubernetes resource quantities ("500m", "2",
// "16Gi", "1.5"), as resource requests, limits and emptyDir sizes take them.
type quantityValidator struct{}

func (quantityValidator) Description(context.Context) string {
	return "value must be a Kubernetes quantity, e.g. \"500m\", \"2\" or \"16Gi\""
}
func (v quantityValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (quantityValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	q, err := resource.ParseQuantity(req.ConfigValue.ValueString())
	switch {
	case err != nil:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid quantity",
			req.Path.String()+" "+quote(req.ConfigValue.ValueString())+" is not a Kubernetes quantity"+
				". Write a number with an optional suffix: \"500m\" or \"2\" for CPU, \"16Gi\" or \"512Mi\" for memory (binary suffixes Ki, Mi, Gi, Ti; decimal k, M, G, T).")
	case q.Sign() < 0:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid quantity",
			req.Path.String()+" "+quote(req.ConfigValue.ValueString())+" is negative; a resource quantity must be zero or more.")
	}
}

// labelsValidator accepts a map of Kubernetes labels: qualified-name keys
// ("app.kubernetes.io/name") and label values (at most 63 characters).
type labelsValidator struct{}

func (labelsValidator) Description(context.Context) string {
	return "keys must be Kubernetes qualified names (optionally prefixed, e.g. \"app.kubernetes.io/name\") and values valid label values (at most 63 alphanumerics, '-', '_' or '.')"
}
func (v labelsValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (labelsValidator) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for key, value := range req.ConfigValue.Elements() {
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			resp.Diagnostics.AddAttributeError(req.Path.AtMapKey(key), "Invalid label key",
				req.Path.String()+" key "+quote(key)+" is not a qualified name: "+strings.Join(errs, "; ")+".")
		}
		s, ok := stringValueOf(value)
		if !ok {
			continue
		}
		if errs := validation.IsValidLabelValue(s); len(errs) > 0 {
			resp.Diagnostics.AddAttributeError(req.Path.AtMapKey(key), "Invalid label value",
				req.Path.String()+"["+quote(key)+"] "+quote(s)+" is not a label value: "+strings.Join(errs, "; ")+".")
		}
	}
}

// annotationsMaxBytes is how large a map of annotations may be, counted
// as the API server counts it (apimachinery's ValidateAnnotationsSize: the
// sum of len(key)+len(value), in bytes): Kubernetes' 256 KiB
// (TotalAnnotationSizeLimitB) less 4 KiB kept for what is added to the
// same objects after the plan: this provider's owner marker on the
// workload (48 bytes), and on a Deployment's ReplicaSets, which copy its
// annotations, the Deployment controller's revision, revision-history (up
// to 2000 characters), desired-replicas and max-replicas annotations
// (about 2.2 KB in all). A map over it passes the API server for the
// Deployment and then fails for its ReplicaSet, so the rollout never
// starts.
const annotationsMaxBytes = apivalidation.TotalAnnotationSizeLimitB - 4<<10

// annotationsValidator accepts a map of Kubernetes annotations: the keys
// must be qualified names (in any case), values are free text, and the
// whole map at most annotationsMaxBytes.
type annotationsValidator struct{}

func (annotationsValidator) Description(context.Context) string {
	return fmt.Sprintf("keys must be Kubernetes qualified names, e.g. \"example.com/owner\"; keys and values together at most %d bytes", annotationsMaxBytes)
}
func (v annotationsValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (annotationsValidator) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	size, unknown := 0, false
	for key, value := range req.ConfigValue.Elements() {
		if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) > 0 {
			resp.Diagnostics.AddAttributeError(req.Path.AtMapKey(key), "Invalid annotation key",
				req.Path.String()+" key "+quote(key)+" is not a qualified name: "+strings.Join(errs, "; ")+".")
		}
		s, ok := stringValueOf(value)
		unknown = unknown || (!ok && !value.IsNull())
		size += len(key) + len(s)
	}
	if !unknown && size > annotationsMaxBytes { // with an unknown value, the API server checks at apply
		resp.Diagnostics.AddAttributeError(req.Path, "Annotations too large",
			fmt.Sprintf("%s holds %d bytes of keys and values, more than %d (%d KiB): Kubernetes limits an object's annotations to %d KiB "+
				"in all, and 4 KiB are kept for the annotations added to the workload and its ReplicaSets. "+
				"Keep large data out of annotations: in a ConfigMap or a volume.",
				req.Path, size, annotationsMaxBytes, annotationsMaxBytes>>10, apivalidation.TotalAnnotationSizeLimitB>>10))
	}
}

// stringValueOf returns the known string inside a map or list element.
func stringValueOf(v attr.Value) (string, bool) {
	s, ok := v.(types.String)
	if !ok || s.IsNull() || s.IsUnknown() {
		return "", false
	}
	return s.ValueString(), true
}

// envNamesValidator accepts a map whose keys are environment variable names
// as Kubernetes takes them: letters, digits, '_', '-' and '.', not starting
// with a digit.
type envNamesValidator struct{}

func (envNamesValidator) Description(context.Context) string {
	return "keys must be environment variable names: letters, digits, '_', '-' or '.', not starting with a digit"
}
func (v envNamesValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (envNamesValidator) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for key := range req.ConfigValue.Elements() {
		if errs := validation.IsEnvVarName(key); len(errs) > 0 {
			resp.Diagnostics.AddAttributeError(req.Path.AtMapKey(key), "Invalid environment variable name",
				req.Path.String()+" key "+quote(key)+" is not an environment variable name: "+strings.Join(errs, "; ")+".")
		}
	}
}
