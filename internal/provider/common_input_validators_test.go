package provider

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/stretchr/testify/require"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

func TestWholeNumberType(t *testing.T) {
	number := func(s string) tftypes.Value {
		f, _, err := big.ParseFloat(s, 10, 512, big.ToNearestEven)
		require.NoError(t, err)
		return tftypes.NewValue(tftypes.Number, f)
	}
	tests := []struct {
		description string
		in          tftypes.Value
		value       attr.Value // what the models get
		err         string     // "" for none, else the error's detail
	}{
		{"A whole number is an Int64.", number("2"), types.Int64Value(2), ""},
		{"A fraction is refused, naming the attribute and the two whole numbers around it.", number("1.5"), types.Int64Unknown(),
			"gpu.count must be a whole number: 1.5 has a fraction. Write 1 or 2."},
		{"A negative fraction is rounded both ways too.", number("-1.5"), types.Int64Unknown(),
			"gpu.count must be a whole number: -1.5 has a fraction. Write -2 or -1."},
		{"A number beyond 64 bits is refused.", number("1e30"), types.Int64Unknown(),
			"gpu.count must be a whole number: 1e+30 is outside the 64-bit range (-9223372036854775808 to 9223372036854775807)."},
		{"The largest int64 is whole.", number("9223372036854775807"), types.Int64Value(9223372036854775807), ""},
		{"Null is left to Required.", tftypes.NewValue(tftypes.Number, nil), types.Int64Null(), ""},
		{"Unknown is checked once known.", tftypes.NewValue(tftypes.Number, tftypes.UnknownValue), types.Int64Unknown(), ""},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			v, err := wholeNumberType{}.ValueFromTerraform(ctx, tt.in)
			require.NoError(t, err, "the conversion never fails: Validate reports")
			require.Equal(t, tt.value, v)
			diags := wholeNumberType{}.Validate(ctx, tt.in, path.Root("gpu").AtName("count"))
			if tt.err == "" {
				require.False(t, diags.HasError(), "%v", diags)
				return
			}
			require.Len(t, diags, 1)
			require.Equal(t, "Not a whole number", diags[0].Summary())
			require.Equal(t, tt.err, diags[0].Detail())
		})
	}
	require.True(t, wholeNumberType{}.Equal(basetypes.Int64Type{}), "objects holding the type accept the Int64Values it makes")
	require.False(t, wholeNumberType{}.Equal(basetypes.StringType{}))
}

func TestImageReferenceProblem(t *testing.T) {
	tests := []struct {
		description string
		image       string
		problem     string // "" when the kubelet accepts it, else a fragment
	}{
		{"A Docker Hub short name is a reference.", "ubuntu", ""},
		{"A registry, repository and tag.", "nvcr.io/nvidia/pytorch:24.05-py3", ""},
		{"A registry with a port.", "registry.example.com:5000/ml/train:v1", ""},
		{"A digest.", "nvcr.io/nvidia/cuda@sha256:" + strings.Repeat("ab", 32), ""},
		{"The device plugin's default image.", kube.DefaultDevicePluginImage, ""},
		{"The DCGM exporter's default image.", kube.DefaultDCGMExporterImage, ""},
		{"Empty.", "", "it is empty"},
		{"A space after the colon.", "nvcr.io/nvidia/pytorch: 24.05-py3", "whitespace at character 24"},
		{"A trailing newline.", "ubuntu\n", "whitespace at character 7"},
		{"An uppercase repository.", "nvcr.io/NVIDIA/pytorch:24.05", "must be lowercase"},
		{"An empty tag.", "nvcr.io/nvidia/pytorch:", "invalid reference format"},
		{"A short digest.", "nvcr.io/nvidia/cuda@sha256:abc", "invalid reference format"},
		{"Two tags.", "ubuntu:22.04:latest", "invalid reference format"},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			got := imageReferenceProblem(tt.image)
			if tt.problem == "" {
				require.Empty(t, got)
				return
			}
			require.Contains(t, got, tt.problem)
		})
	}
}

func TestPositiveDurationValidator(t *testing.T) {
	tests := []struct {
		value string
		err   string // "" for none, else a fragment of the detail
	}{
		{"30m", ""}, {"1h30m", ""}, {"90s", ""},
		{"-5m", `timeouts.create "-5m" is not positive`},
		{"0s", "is not positive"},
		{"0", "is not positive"},
		{"soon", `timeouts.create "soon" is not a duration`},
		{"5 minutes", "is not a duration"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			resp := &validator.StringResponse{}
			positiveDurationValidator{}.ValidateString(context.Background(), validator.StringRequest{
				Path: path.Root("timeouts").AtName("create"), ConfigValue: types.StringValue(tt.value),
			}, resp)
			if tt.err == "" {
				require.False(t, resp.Diagnostics.HasError(), "%v", resp.Diagnostics)
				return
			}
			require.True(t, resp.Diagnostics.HasError())
			require.Contains(t, resp.Diagnostics[0].Detail(), tt.err)
		})
	}
}

func TestAnnotationsSizeLimit(t *testing.T) {
	// One key of 19 bytes and a value that brings the map to size bytes,
	// counted as the API server counts it.
	annotations := func(size int) (types.Map, map[string]string) {
		const key = "example.com/payload"
		m := map[string]string{key: strings.Repeat("x", size-len(key))}
		return types.MapValueMust(types.StringType, map[string]attr.Value{key: types.StringValue(m[key])}), m
	}
	validate := func(v types.Map) *validator.MapResponse {
		resp := &validator.MapResponse{}
		annotationsValidator{}.ValidateMap(context.Background(), validator.MapRequest{
			Path: path.Root("metadata").AtName("annotations"), ConfigValue: v,
		}, resp)
		return resp
	}

	atLimit, _ := annotations(annotationsMaxBytes)
	require.False(t, validate(atLimit).Diagnostics.HasError(), "exactly the limit is allowed")

	over, _ := annotations(annotationsMaxBytes + 1)
	resp := validate(over)
	require.True(t, resp.Diagnostics.HasError())
	require.Contains(t, resp.Diagnostics[0].Detail(), "metadata.annotations holds 258049 bytes of keys and values, more than 258048 (252 KiB)")

	// The API server's own rule, on the same count: what it refuses, this refuses.
	_, tooBig := annotations(apivalidation.TotalAnnotationSizeLimitB + 1)
	require.Error(t, apivalidation.ValidateAnnotationsSize(tooBig))
	v, _ := annotations(apivalidation.TotalAnnotationSizeLimitB + 1)
	require.True(t, validate(v).Diagnostics.HasError())
}

func TestReplicasBound(t *testing.T) {
	check := func(b replicasBound, n int64) *validator.Int64Response {
		resp := &validator.Int64Response{}
		b.ValidateInt64(context.Background(), validator.Int64Request{
			Path: path.Root("config").AtName(b.block).AtName("resource").AtListIndex(0).AtName("replicas"), ConfigValue: types.Int64Value(n),
		}, resp)
		return resp
	}
	require.False(t, check(timeSlicingReplicas, 512).Diagnostics.HasError())
	resp := check(timeSlicingReplicas, 10000)
	require.True(t, resp.Diagnostics.HasError())
	require.Contains(t, resp.Diagnostics[0].Detail(), "config.time_slicing.resource[0].replicas = 10000 is more than time_slicing supports: at most 512")
	require.False(t, check(mpsReplicas, 100).Diagnostics.HasError())
	require.Contains(t, check(mpsReplicas, 101).Diagnostics[0].Detail(), "0% above 100")
}
