package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// This file turns Terraform's string lists, sets and maps into Go's and
// back, for every resource and data source.

// stringsOf is the known strings of a list or set; unknown elements are skipped.
func stringsOf(ctx context.Context, v interface {
	IsNull() bool
	IsUnknown() bool
	Elements() []attr.Value
}) []string {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	var out []string
	for _, e := range v.Elements() {
		if s, ok := e.(types.String); ok && !s.IsNull() && !s.IsUnknown() {
			out = append(out, s.ValueString())
		}
	}
	return out
}

// stringMapOf is a map of strings; unknown or null values are skipped.
func stringMapOf(m types.Map) map[string]string {
	if m.IsNull() || m.IsUnknown() {
		return nil
	}
	out := map[string]string{}
	for k, e := range m.Elements() {
		if s, ok := e.(types.String); ok && !s.IsNull() && !s.IsUnknown() {
			out[k] = s.ValueString()
		}
	}
	return out
}

// stringListValue is ss as a list value (empty, not null, for none).
func stringListValue(ss []string) types.List {
	elems := make([]attr.Value, len(ss))
	for i, s := range ss {
		elems[i] = types.StringValue(s)
	}
	return types.ListValueMust(types.StringType, elems)
}

// stringSetValue is ss as a set value.
func stringSetValue(ss []string) types.Set {
	elems := make([]attr.Value, len(ss))
	for i, s := range ss {
		elems[i] = types.StringValue(s)
	}
	return types.SetValueMust(types.StringType, elems)
}
