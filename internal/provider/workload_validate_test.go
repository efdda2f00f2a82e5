package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"
)

func TestProductsContradiction(t *testing.T) {
	tests := []struct {
		description string
		products    []string
		minGiB      types.Int64
		minCC       types.String
		warns       string // "" for no warning, else a fragment of it
	}{
		{"An H100 has 79.6 GiB, so 80 GiB asks for more than it has.", []string{"NVIDIA-H100-80GB-HBM3"}, types.Int64Value(80), types.StringNull(),
			"NVIDIA-H100-80GB-HBM3 has 81559 MiB (79.6 GiB)"},
		{"79 GiB fits an H100.", []string{"NVIDIA-H100-80GB-HBM3"}, types.Int64Value(79), types.StringNull(), ""},
		{"One product that fits is enough.", []string{"Tesla-T4", "NVIDIA-A100-SXM4-80GB"}, types.Int64Value(48), types.StringNull(), ""},
		{"A product the table does not know might fit: no warning.", []string{"NVIDIA-B200"}, types.Int64Value(160), types.StringNull(), ""},
		{"A T4 is compute capability 7.5, below 8.0.", []string{"Tesla-T4"}, types.Int64Null(), types.StringValue("8.0"),
			`min_compute_capability = "8.0"`},
		{"An unknown memory is checked at apply, not warned about.", []string{"Tesla-T4"}, types.Int64Unknown(), types.StringNull(), ""},
		{"A -SHARED product is looked up without its suffix.", []string{"Tesla-T4-SHARED"}, types.Int64Value(16), types.StringNull(),
			"Tesla-T4-SHARED has 15360 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			got := productsContradiction(tt.products, tt.minGiB, tt.minCC)
			if tt.warns == "" {
				require.Empty(t, got)
				return
			}
			require.Contains(t, got, tt.warns)
		})
	}
}
