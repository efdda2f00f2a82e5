package provider

import (
	"context"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/stretchr/testify/require"
)

// Guards of the checks issue 12 asked for "in general": every attribute of
// a kind gets its check, in every resource and data source, including
// attributes added later.

// configurableAttribute is what every schema attribute (resource or data
// source, any kind) answers.
type configurableAttribute interface {
	GetType() attr.Type
	IsComputed() bool
	IsOptional() bool
	IsRequired() bool
}

// walkSchema calls fn with the path and the attribute of every attribute in
// v (a schema, a block or a nested attribute) and in everything it nests.
func walkSchema(prefix string, v reflect.Value, fn func(path string, a configurableAttribute)) {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	for _, field := range []string{"Attributes", "Blocks"} {
		m := v.FieldByName(field)
		if !m.IsValid() || m.Kind() != reflect.Map {
			continue
		}
		for _, key := range m.MapKeys() {
			child := m.MapIndex(key)
			p := prefix + key.String()
			if a, ok := child.Interface().(configurableAttribute); ok && field == "Attributes" {
				fn(p, a)
			}
			walkSchema(p+".", child, fn)
		}
	}
	if nested := v.FieldByName("NestedObject"); nested.IsValid() {
		walkSchema(prefix, nested, fn)
	}
}

// everySchema walks the schema of every resource and data source the
// provider registers, prefixing paths with the type's name.
func everySchema(t *testing.T, fn func(path string, a configurableAttribute)) {
	t.Helper()
	ctx := context.Background()
	p := New("test")()
	for _, newResource := range p.Resources(ctx) {
		r := newResource()
		var meta resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "gpu"}, &meta)
		var resp resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &resp)
		walkSchema(meta.TypeName+".", reflect.ValueOf(resp.Schema), fn)
	}
	for _, newDataSource := range p.DataSources(ctx) {
		d := newDataSource()
		var meta datasource.MetadataResponse
		d.Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "gpu"}, &meta)
		var resp datasource.SchemaResponse
		d.Schema(ctx, datasource.SchemaRequest{}, &resp)
		walkSchema("data."+meta.TypeName+".", reflect.ValueOf(resp.Schema), fn)
	}
}

func configurable(a configurableAttribute) bool { return a.IsOptional() || a.IsRequired() }

func TestIntegerAttributesRejectFractions(t *testing.T) {
	var integers, plain []string
	everySchema(t, func(path string, a configurableAttribute) {
		if !configurable(a) {
			return
		}
		switch a.GetType().(type) {
		case wholeNumberType:
			integers = append(integers, path)
		case basetypes.Int64Type:
			plain = append(plain, path)
		}
	})
	sort.Strings(plain)
	require.Empty(t, plain, "set CustomType: wholeNumberType{} on these, or a fraction reaches users as the framework's conversion error")
	require.Contains(t, integers, "gpu_workload.gpu.count")
	require.Contains(t, integers, "gpu_workload.tolerations.toleration_seconds")
	require.Contains(t, integers, "gpu_device_plugin.config.time_slicing.resource.replicas")
	require.Contains(t, integers, "data.gpu_inventory.filter.min_free_gpus")
}

func TestImageAttributesAreImageReferences(t *testing.T) {
	var images, unchecked []string
	everySchema(t, func(path string, a configurableAttribute) {
		if !configurable(a) || !strings.HasSuffix(path, ".image") {
			return
		}
		images = append(images, path)
		s, ok := a.(interface{ StringValidators() []validator.String })
		if !ok || !slices.ContainsFunc(s.StringValidators(), func(v validator.String) bool { _, ok := v.(imageReferenceValidator); return ok }) {
			unchecked = append(unchecked, path)
		}
	})
	require.Empty(t, unchecked, "add imageReferenceValidator{} to these image attributes")
	require.ElementsMatch(t, []string{
		"gpu_workload.container.image", "gpu_device_plugin.image",
		"gpu_device_plugin.gpu_feature_discovery.image", "gpu_device_plugin.dcgm_exporter.image", "gpu_device_plugin.health_agent.image",
		"gpu_dra_driver.image",
	}, images)
}

func TestTimeoutsMustBePositive(t *testing.T) {
	var timeouts, unchecked []string
	everySchema(t, func(path string, a configurableAttribute) {
		if !configurable(a) || !strings.Contains(path, ".timeouts.") {
			return
		}
		timeouts = append(timeouts, path)
		s, ok := a.(interface{ StringValidators() []validator.String })
		if !ok || !slices.Equal(s.StringValidators(), []validator.String{positiveDurationValidator{}}) {
			unchecked = append(unchecked, path)
		}
	})
	require.Empty(t, unchecked, "build the timeouts block with resourceTimeoutsBlock")
	require.Contains(t, timeouts, "gpu_workload.timeouts.create")
	require.Contains(t, timeouts, "gpu_device_plugin.timeouts.delete")
}
