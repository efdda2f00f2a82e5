package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

func TestTaintKeyAndValueValidators(t *testing.T) {
	tests := []struct {
		description string
		v           validator.String
		value       string
		valid       bool
	}{
		{"A plain key is valid.", taintKeyValidator{}, "dedicated", true},
		{"A prefixed key is valid.", taintKeyValidator{}, "nvidia.com/gpu", true},
		{"A key with a space is refused.", taintKeyValidator{}, "dedicated gpu", false},
		{"A key that starts with a hyphen is refused.", taintKeyValidator{}, "-gpu", false},
		{"A key with a '!' is refused.", taintKeyValidator{}, "gpu!", false},
		{"A prefixed key over EKS's 63 characters in all is refused.", taintKeyValidator{}, "example.com/" + strings.Repeat("a", 52), false},
		{"An empty value is valid.", taintValueValidator{}, "", true},
		{"A value with a space is refused.", taintValueValidator{}, "a b", false},
		{"A value that ends with a hyphen is refused.", taintValueValidator{}, "gpu-", false},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			resp := &validator.StringResponse{}
			tc.v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("taints"), ConfigValue: types.StringValue(tc.value)}, resp)
			require.Equal(t, tc.valid, !resp.Diagnostics.HasError(), "%v", resp.Diagnostics)
		})
	}
}

func TestTaintCountIncludesTheGPUTaint(t *testing.T) {
	taints := func(n int) []eks.Taint {
		out := make([]eks.Taint, n)
		for i := range out {
			out[i] = eks.Taint{Key: fmt.Sprintf("t%02d", i), Effect: "NO_SCHEDULE"}
		}
		return out
	}
	require.False(t, validateNodeGroupTaintCount(taints(49), true).HasError(), "49 and the GPU taint are 50")
	require.True(t, validateNodeGroupTaintCount(taints(50), true).HasError(), "50 and the GPU taint are 51")
	require.False(t, validateNodeGroupTaintCount(taints(50), false).HasError(), "50 without the GPU taint")
	require.False(t, validateNodeGroupTaintCount(append(taints(49), nodeGroupGPUTaint), true).HasError(), "the GPU taint written by the user counts once")
}

// Auto Scaling's 50 tags per group hold EKS's 5 and the provider's
// node-template tags: the GPU label, resource and taint count too.
func TestNodeTemplateTagCountIncludesWhatTheProviderAdds(t *testing.T) {
	taints := func(n int) []eks.Taint {
		out := make([]eks.Taint, n)
		for i := range out {
			out[i] = eks.Taint{Key: fmt.Sprintf("t%02d", i), Effect: "NO_SCHEDULE"}
		}
		return out
	}
	// 1 GPU label + 42 taints + the GPU taint + the GPU resource = 45.
	require.False(t, validateNodeTemplateTagCount(nil, taints(42), true).HasError(), "45 tags fit beside EKS's 5")
	require.True(t, validateNodeTemplateTagCount(nil, taints(43), true).HasError(), "46 tags do not")
	require.False(t, validateNodeTemplateTagCount(nil, taints(43), false).HasError(), "without the GPU taint, 45")
	require.True(t, validateNodeTemplateTagCount(map[string]string{"team": "ml"}, taints(42), true).HasError(), "a label is a tag too")
	// Two taints of one key are one tag.
	twoEffects := append(taints(42), eks.Taint{Key: "t00", Effect: "NO_EXECUTE"})
	require.False(t, validateNodeTemplateTagCount(nil, twoEffects, true).HasError(), "one tag per taint key")
	d := validateNodeTemplateTagCount(nil, taints(45), true)
	require.Contains(t, d.Errors()[0].Detail(), "48 tags")
	require.Contains(t, d.Errors()[0].Detail(), "Remove 3 labels or taints")
}
