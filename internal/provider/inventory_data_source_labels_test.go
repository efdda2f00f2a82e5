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

func TestIncludeLabelsValidator(t *testing.T) {
	for _, tc := range []struct {
		description string
		entries     []string
		want        string
	}{
		{"a prefixed key", []string{"nvidia.com/gpu.product"}, ""},
		{"an unprefixed key", []string{"pool"}, ""},
		{"a prefix of a label family", []string{"nvidia.com/*", "feature.node.kubernetes.io/pci-*"}, ""},
		{"every label", []string{"*"}, ""},
		{"a space is not a label key character", []string{"pool", "nvidia.com/gpu product"},
			`include_labels[1] "nvidia.com/gpu product" is not a label key`},
		{"a star in the middle", []string{"nvidia.com/*.product"}, `include_labels[0] "nvidia.com/*.product" has "*" other than at the end`},
		{"two stars", []string{"nvidia.com/**"}, `has "*" other than once at the end`},
		{"an empty key", []string{""}, `include_labels[0] "" is not a label key`},
		{"a prefix that no key could start with", []string{"-bad*"}, `include_labels[0] "-bad*" is not a label key`},
		{"a DNS prefix with an upper-case letter", []string{"NVIDIA.com/gpu.product"}, `is not a label key`},
	} {
		t.Run(tc.description, func(t *testing.T) {
			list, diags := types.ListValueFrom(context.Background(), types.StringType, tc.entries)
			require.False(t, diags.HasError())
			resp := &validator.ListResponse{}
			includeLabelsValidator{}.ValidateList(context.Background(), validator.ListRequest{Path: path.Root("include_labels"), ConfigValue: list}, resp)
			if tc.want == "" {
				require.False(t, resp.Diagnostics.HasError(), errorDetails(resp.Diagnostics))
				return
			}
			require.Contains(t, errorDetails(resp.Diagnostics), tc.want)
			require.Contains(t, errorDetails(resp.Diagnostics), `e.g. "nvidia.com/*"`, "the error says how to fix it")
		})
	}
}

func TestInventoryLabelKeep(t *testing.T) {
	list, _ := types.ListValueFrom(context.Background(), types.StringType, []string{"pool", "nvidia.com/*", "*"})
	require.Equal(t, kube.LabelKeep{All: true, Keys: []string{"pool"}, Prefixes: []string{"nvidia.com/"}}, inventoryLabelKeep(context.Background(), list))
	require.True(t, inventoryLabelKeep(context.Background(), types.ListNull(types.StringType)).None(), "unset keeps no label")
}

func TestInventoryKubernetesOnlyArguments(t *testing.T) {
	for _, tc := range []struct {
		description string
		source      string
		model       func(*inventoryModel)
		want        string
	}{
		{"include_labels with kubernetes", "kubernetes", func(m *inventoryModel) { m.IncludeLabels = types.ListValueMust(types.StringType, nil) }, ""},
		{"include_labels with ec2", "ec2", func(m *inventoryModel) { m.IncludeLabels = types.ListValueMust(types.StringType, nil) },
			`include_labels shapes the nodes of source = "kubernetes" only; with source = "ec2" remove it`},
		{"include_nodes with proxmox", "proxmox", func(m *inventoryModel) { m.IncludeNodes = types.BoolValue(false) },
			`include_nodes shapes the nodes of source = "kubernetes" only; with source = "proxmox" remove it`},
	} {
		t.Run(tc.description, func(t *testing.T) {
			m := inventoryModel{Source: types.StringValue(tc.source), IncludeLabels: types.ListNull(types.StringType), IncludeNodes: types.BoolNull()}
			tc.model(&m)
			diags := m.validateKubernetesOnly()
			if tc.want == "" {
				require.False(t, diags.HasError(), errorDetails(diags))
				return
			}
			require.Contains(t, errorDetails(diags), tc.want)
		})
	}
}
