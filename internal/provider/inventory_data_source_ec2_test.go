package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

func TestInventorySourcesRefuseTheOtherSourcesFilters(t *testing.T) {
	emptyFilter := func() *inventoryFilterModel {
		return &inventoryFilterModel{
			Product: types.StringNull(), MinGPUMemoryGiB: types.Float64Null(), MinFreeGPUs: types.Int64Null(), LabelSelector: types.StringNull(),
			GPUProducts: types.ListNull(types.StringType), MinGPUs: types.Int64Null(), MaxGPUs: types.Int64Null(),
			Architectures: types.ListNull(types.StringType), AvailabilityZones: types.ListNull(types.StringType), SpotPrices: types.BoolNull(),
		}
	}
	for _, tc := range []struct {
		description string
		source      string
		sortBy      string
		change      func(f *inventoryFilterModel)
		want        string
	}{
		{"memory applies to both", "ec2", "", func(f *inventoryFilterModel) { f.MinGPUMemoryGiB = types.Float64Value(80) }, ""},
		{"a product regex with ec2", "ec2", "", func(f *inventoryFilterModel) { f.Product = types.StringValue("H100") },
			`filter.product applies with source = "kubernetes" or "proxmox" only; with source = "ec2" remove it (see filter.gpu_products`},
		{"gpu_products with kubernetes", "kubernetes", "", func(f *inventoryFilterModel) {
			f.GPUProducts = types.ListValueMust(types.StringType, nil)
		}, `filter.gpu_products applies with source = "ec2" only`},
		{"min above max", "ec2", "", func(f *inventoryFilterModel) { f.MinGPUs, f.MaxGPUs = types.Int64Value(8), types.Int64Value(4) }, "filter.min_gpus is more than filter.max_gpus"},
		{"spot price order without prices", "ec2", "spot_price", func(*inventoryFilterModel) {}, `sort_by = "spot_price" needs the prices`},
		{"spot price order with prices", "ec2", "spot_price", func(f *inventoryFilterModel) { f.SpotPrices = types.BoolValue(true) }, ""},
		{"sort_by with kubernetes", "kubernetes", "instance_type", func(*inventoryFilterModel) {}, `sort_by orders EC2's instance types`},
	} {
		t.Run(tc.description, func(t *testing.T) {
			f := emptyFilter()
			tc.change(f)
			m := inventoryModel{Source: types.StringValue(tc.source), Filter: f, SortBy: types.StringNull()}
			if tc.sortBy != "" {
				m.SortBy = types.StringValue(tc.sortBy)
			}
			diags := m.validateSourceFilters()
			if tc.want == "" {
				require.False(t, diags.HasError(), errorDetails(diags))
				return
			}
			require.Contains(t, errorDetails(diags), tc.want)
		})
	}
}

func TestInventoryInstanceTypesSortCheapestFirst(t *testing.T) {
	entries := []eks.CatalogEntry{
		{InstanceType: eks.InstanceType{Name: "g5.xlarge"}, SpotPrices: map[string]float64{"us-west-2a": 0.45, "us-west-2b": 0.39}},
		{InstanceType: eks.InstanceType{Name: "g4dn.xlarge"}, SpotPrices: map[string]float64{"us-west-2a": 0.21}},
		{InstanceType: eks.InstanceType{Name: "a.none"}},
		{InstanceType: eks.InstanceType{Name: "p5.48xlarge"}, SpotPrices: map[string]float64{"us-west-2a": 40.1}},
	}
	models := inventoryInstanceTypes(entries)
	require.InDelta(t, 0.39, *models[0].MinSpotPrice, 1e-9, "min_spot_price is the lowest zone's")
	require.Nil(t, models[2].MinSpotPrice)

	sortInstanceTypes(models, "spot_price")
	var names []string
	for _, m := range models {
		names = append(names, m.InstanceType)
	}
	require.Equal(t, []string{"g4dn.xlarge", "g5.xlarge", "p5.48xlarge", "a.none"}, names)

	sortInstanceTypes(models, "instance_type")
	require.Equal(t, "a.none", models[0].InstanceType)
}
