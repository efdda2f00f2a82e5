package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"
)

func TestInventoryCapacityPlanChecks(t *testing.T) {
	base := func() *inventoryCapacityModel {
		return &inventoryCapacityModel{
			Reservations: types.BoolNull(), Details: types.BoolNull(), Offerings: types.BoolValue(true),
			InstanceCount: types.Int64Value(2), DurationHours: types.Int64Value(48),
			StartAfter: types.StringNull(), EndBefore: types.StringNull(), Sort: types.StringNull(),
		}
	}
	for _, tc := range []struct {
		description string
		source      string
		change      func(c *inventoryCapacityModel)
		want        string
	}{
		{"offerings with a count and a duration", "ec2", func(*inventoryCapacityModel) {}, ""},
		{"reservations alone", "ec2", func(c *inventoryCapacityModel) {
			c.Offerings, c.Reservations, c.DurationHours = types.BoolNull(), types.BoolValue(true), types.Int64Null()
		}, ""},
		{"another source", "kubernetes", func(*inventoryCapacityModel) {}, `applies with source = "ec2" only`},
		{"nothing asked", "ec2", func(c *inventoryCapacityModel) {
			c.Offerings = types.BoolValue(false)
			c.DurationHours = types.Int64Null()
		}, "asks for nothing"},
		{"offerings without a count", "ec2", func(c *inventoryCapacityModel) { c.InstanceCount = types.Int64Null() }, "offerings = true needs instance_count"},
		{"offerings without a duration", "ec2", func(c *inventoryCapacityModel) { c.DurationHours = types.Int64Null() }, "offerings = true needs duration_hours"},
		{"a count EC2 does not sell", "ec2", func(c *inventoryCapacityModel) { c.InstanceCount = types.Int64Value(3) }, "instance_count = 3: EC2 sells Capacity Blocks of 1, 2, 4, 8, 16, 32, 64 instances"},
		{"a duration not in days", "ec2", func(c *inventoryCapacityModel) { c.DurationHours = types.Int64Value(36) }, "duration_hours = 36: EC2 sells"},
		{"15 days is not whole weeks", "ec2", func(c *inventoryCapacityModel) { c.DurationHours = types.Int64Value(15 * 24) }, "duration_hours = 360"},
		{"three weeks", "ec2", func(c *inventoryCapacityModel) { c.DurationHours = types.Int64Value(21 * 24) }, ""},
		{"past 182 days", "ec2", func(c *inventoryCapacityModel) { c.DurationHours = types.Int64Value(189 * 24) }, "duration_hours = 4536"},
		{"dates the wrong way round", "ec2", func(c *inventoryCapacityModel) {
			c.StartAfter, c.EndBefore = types.StringValue("2026-12-10T00:00:00Z"), types.StringValue("2026-12-01T00:00:00Z")
		}, "end_before (2026-12-01T00:00:00Z) is not after start_after"},
		{"sort without offerings", "ec2", func(c *inventoryCapacityModel) {
			c.Offerings, c.Reservations, c.DurationHours, c.Sort = types.BoolNull(), types.BoolValue(true), types.Int64Null(), types.StringValue("price")
		}, "sort orders capacity_block_offerings"},
		{"details without reservations", "ec2", func(c *inventoryCapacityModel) { c.Details = types.BoolValue(true) }, "details adds block status"},
		{"unknown offerings waits for apply", "ec2", func(c *inventoryCapacityModel) {
			c.Offerings, c.InstanceCount = types.BoolUnknown(), types.Int64Null()
		}, ""},
	} {
		t.Run(tc.description, func(t *testing.T) {
			c := base()
			tc.change(c)
			m := inventoryModel{Source: types.StringValue(tc.source), Capacity: c}
			diags := m.validateCapacity()
			if tc.want == "" {
				require.False(t, diags.HasError(), "%v", diags)
				return
			}
			require.True(t, diags.HasError(), "want an error with %q", tc.want)
			require.Contains(t, diags.Errors()[0].Detail(), tc.want)
		})
	}
}
