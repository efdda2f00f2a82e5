package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"
)

func TestKubernetesStringValidators(t *testing.T) {
	tests := []struct {
		description string
		validator   validator.String
		value       types.String
		wantError   bool
	}{
		{"A lowercase label is a DNS-1123 label.", dns1123LabelValidator{}, types.StringValue("gpu-train"), false},
		{"Capitals are not allowed in a DNS-1123 label.", dns1123LabelValidator{}, types.StringValue("GPU"), true},
		{"Dots are not allowed in a DNS-1123 label.", dns1123LabelValidator{}, types.StringValue("a.b"), true},
		{"A label longer than 63 characters is rejected.", dns1123LabelValidator{}, types.StringValue("a123456789012345678901234567890123456789012345678901234567890123"), true},
		{"Dots are allowed in a DNS-1123 subdomain.", dns1123SubdomainValidator{}, types.StringValue("train.v2"), false},
		{"Underscores are not allowed in a DNS-1123 subdomain.", dns1123SubdomainValidator{}, types.StringValue("train_v2"), true},
		{"A leading dash is not allowed in a DNS-1123 subdomain.", dns1123SubdomainValidator{}, types.StringValue("-train"), true},
		{"Millicores are a quantity.", quantityValidator{}, types.StringValue("500m"), false},
		{"A binary suffix is a quantity.", quantityValidator{}, types.StringValue("16Gi"), false},
		{"A decimal fraction is a quantity.", quantityValidator{}, types.StringValue("1.5"), false},
		{"GB is not a Kubernetes suffix.", quantityValidator{}, types.StringValue("16GB"), true},
		{"A negative quantity is rejected.", quantityValidator{}, types.StringValue("-1"), true},
		{"Words are not a quantity.", quantityValidator{}, types.StringValue("lots"), true},
		{"A null value is left to Required/Optional.", quantityValidator{}, types.StringNull(), false},
		{"An unknown value is checked at apply.", dns1123LabelValidator{}, types.StringUnknown(), false},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			resp := &validator.StringResponse{}
			tt.validator.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("x"), ConfigValue: tt.value}, resp)
			require.Equal(t, tt.wantError, resp.Diagnostics.HasError(), "%v", resp.Diagnostics)
		})
	}
}

func TestKubernetesMapValidators(t *testing.T) {
	str := func(m map[string]string) types.Map {
		elems := map[string]attr.Value{}
		for k, v := range m {
			elems[k] = types.StringValue(v)
		}
		return types.MapValueMust(types.StringType, elems)
	}
	tests := []struct {
		description string
		validator   validator.Map
		value       types.Map
		wantError   bool
	}{
		{"Prefixed label keys are allowed.", labelsValidator{}, str(map[string]string{"app.kubernetes.io/name": "train"}), false},
		{"A label value with a space is rejected.", labelsValidator{}, str(map[string]string{"team": "ml ops"}), true},
		{"A label key with two slashes is rejected.", labelsValidator{}, str(map[string]string{"a/b/c": "x"}), true},
		{"Annotation values are free text.", annotationsValidator{}, str(map[string]string{"example.com/owner": "ML Ops <ml@example.com>"}), false},
		{"An annotation key with a space is rejected.", annotationsValidator{}, str(map[string]string{"my key": "x"}), true},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			resp := &validator.MapResponse{}
			tt.validator.ValidateMap(context.Background(), validator.MapRequest{Path: path.Root("labels"), ConfigValue: tt.value}, resp)
			require.Equal(t, tt.wantError, resp.Diagnostics.HasError(), "%v", resp.Diagnostics)
		})
	}
}

func TestParseNamespacedImportID(t *testing.T) {
	tests := []struct {
		description     string
		id              string
		namespace, name string
		wantError       bool
	}{
		{"A namespace and a name split at the slash.", "default/train", "default", "train", false},
		{"A bare name is rejected: the namespace is required.", "train", "", "", true},
		{"Three parts are rejected.", "a/b/c", "", "", true},
		{"An empty name is rejected.", "default/", "", "", true},
		{"A name that is not DNS-1123 is rejected.", "default/Train", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			ns, name, err := parseNamespacedImportID(tt.id)
			if tt.wantError {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.namespace, ns)
			require.Equal(t, tt.name, name)
		})
	}
}
