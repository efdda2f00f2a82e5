package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

func TestDevicePluginResourceNameValidator(t *testing.T) {
	tests := []struct {
		description string
		value       types.String
		wantError   string
	}{
		{"Full GPUs are nvidia.com/gpu.", types.StringValue("nvidia.com/gpu"), ""},
		{"A MIG profile resource is a resource name.", types.StringValue("nvidia.com/mig-1g.10gb"), ""},
		{"A name without the nvidia.com/ prefix is rejected.", types.StringValue("gpu"), `does not start with "nvidia.com/"`},
		{"Another vendor's prefix is rejected.", types.StringValue("amd.com/gpu"), `does not start with "nvidia.com/"`},
		{"Capitals are not a DNS-1123 subdomain.", types.StringValue("nvidia.com/GPU"), "not a DNS-1123 subdomain"},
		{"More than 63 characters is too long.", types.StringValue("nvidia.com/" + "a123456789b123456789c123456789d123456789e123456789f12"), "more than 63"},
		{"A null value is left to the schema.", types.StringNull(), ""},
		{"An unknown value is checked at apply.", types.StringUnknown(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			resp := &validator.StringResponse{}
			devicePluginResourceNameValidator{}.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("name"), ConfigValue: tt.value}, resp)
			if tt.wantError == "" {
				require.False(t, resp.Diagnostics.HasError(), "%v", resp.Diagnostics)
				return
			}
			require.True(t, resp.Diagnostics.HasError())
			require.Contains(t, resp.Diagnostics.Errors()[0].Detail(), tt.wantError)
		})
	}
}

func TestMaxUnavailableRegex(t *testing.T) {
	tests := []struct {
		description string
		value       string
		valid       bool
	}{
		{"A count of one node is valid.", "1", true},
		{"A larger count is valid.", "12", true},
		{"A percentage is valid.", "25%", true},
		{"All the nodes at once is valid.", "100%", true},
		{"Zero would never roll out.", "0", false},
		{"Zero percent would never roll out.", "0%", false},
		{"More than 100% is not a share.", "101%", false},
		{"A negative count is rejected.", "-1", false},
		{"A fraction is rejected.", "0.5", false},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			require.Equal(t, tt.valid, maxUnavailableRegex.MatchString(tt.value))
		})
	}
}

func TestValidateSharing(t *testing.T) {
	resource := func(name string, replicas int64, rename string) devicePluginSharedResourceModel {
		r := devicePluginSharedResourceModel{Name: types.StringValue(name), Replicas: types.Int64Value(replicas), Rename: types.StringNull()}
		if rename != "" {
			r.Rename = types.StringValue(rename)
		}
		return r
	}
	tests := []struct {
		description  string
		config       *devicePluginConfigModel
		wantErrors   int
		wantWarnings int
	}{
		{"No config block needs no check.", nil, 0, 0},
		{"One shared resource is fine.", &devicePluginConfigModel{TimeSlicing: &devicePluginSharingModel{
			Resources: []devicePluginSharedResourceModel{resource("nvidia.com/gpu", 4, "")}}}, 0, 0},
		{"A sharing block without resources is an error.", &devicePluginConfigModel{MPS: &devicePluginSharingModel{}}, 1, 0},
		{"The same resource twice is an error.", &devicePluginConfigModel{TimeSlicing: &devicePluginSharingModel{
			Resources: []devicePluginSharedResourceModel{resource("nvidia.com/gpu", 4, ""), resource("nvidia.com/gpu", 2, "")}}}, 1, 0},
		{"A rename, which the plugin ignores, is a warning.", &devicePluginConfigModel{TimeSlicing: &devicePluginSharingModel{
			Resources: []devicePluginSharedResourceModel{resource("nvidia.com/gpu", 4, "nvidia.com/gpu-quarter")}}}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			diags := tt.config.validateSharing(path.Root("config"))
			require.Len(t, diags.Errors(), tt.wantErrors, "%v", diags)
			require.Len(t, diags.Warnings(), tt.wantWarnings, "%v", diags)
		})
	}
}

func TestDevicePluginConfigRoundTrip(t *testing.T) {
	ctx := context.Background()
	t.Run("No block renders the plugin's defaults and reads back as no block.", func(t *testing.T) {
		var none *devicePluginConfigModel
		c, diags := none.toKube(ctx)
		require.False(t, diags.HasError())
		require.Equal(t, kube.DefaultDevicePluginConfig(), c)
		require.Nil(t, devicePluginConfigFromKube(c, nil))
	})
	t.Run("A block with only defaults stays a block when the state had one.", func(t *testing.T) {
		prior := &devicePluginConfigModel{}
		require.NotNil(t, devicePluginConfigFromKube(kube.DefaultDevicePluginConfig(), prior))
	})
	t.Run("Sharing settings survive the trip through the config file.", func(t *testing.T) {
		yes := true
		c := kube.DefaultDevicePluginConfig()
		c.MIGStrategy = "single"
		c.MPS = &kube.SharingConfig{RenameByDefault: true, FailRequestsGreaterThanOne: &yes, Resources: []kube.SharedResource{{Name: "nvidia.com/gpu", Replicas: 3}}}
		model := devicePluginConfigFromKube(c, nil)
		require.NotNil(t, model)
		back, diags := model.toKube(ctx)
		require.False(t, diags.HasError())
		require.Equal(t, c, back)
	})
}
