package provider

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/awsemu"
)

// TestAccInventoryDataSource_ec2CapacityListsABlockAndAnOffering seeds a
// Capacity Block (H100, zone a) and an On-Demand Capacity Reservation (A100,
// zone b) in the emulator and reads them, with offerings, through the
// capacity block: ids, dates and counts as seeded, filters by product,
// zone and count, offerings by price and by start.
func TestAccInventoryDataSource_ec2CapacityListsABlockAndAnOffering(t *testing.T) {
	testAccPreCheck(t)
	now := time.Now().UTC().Truncate(time.Second)
	blockStart, blockEnd := now.Add(-time.Hour), now.Add(47*time.Hour)
	block, err := emu.AddCapacityReservation(awsemu.CapacityReservationSeed{
		InstanceType: "p5.48xlarge", AvailabilityZone: "us-west-2a", Count: 2, Block: true, Start: blockStart, End: blockEnd,
	})
	require.NoError(t, err)
	odcr, err := emu.AddCapacityReservation(awsemu.CapacityReservationSeed{
		InstanceType: "p4d.24xlarge", AvailabilityZone: "us-west-2b", Count: 4,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, emu.EndCapacityReservation(block))
		require.NoError(t, emu.EndCapacityReservation(odcr))
	})

	const address = "data.gpu_inventory.capacity"
	config := func(filter, capacity string) string {
		return providerConfig() + fmt.Sprintf(`
data "gpu_inventory" "capacity" {
  source = "ec2"
  filter {
    %s
  }
  capacity {
    %s
  }
}
`, filter, capacity)
	}
	reservations := func(s *terraform.State) map[string]map[string]string {
		attrs := s.RootModule().Resources[address].Primary.Attributes
		n, err := strconv.Atoi(attrs["capacity_reservations.#"])
		require.NoError(t, err)
		out := map[string]map[string]string{}
		lastStart := ""
		for i := range n {
			r := map[string]string{}
			for _, k := range []string{"id", "arn", "instance_type", "gpu_product", "gpu_count", "availability_zone", "total_instances",
				"available_instances", "start_date", "end_date", "state", "reservation_type", "tenancy", "instance_match_criteria",
				"capacity_block_id", "interconnect_status", "network_nodes.#", "network_nodes.0"} {
				r[k] = attrs[fmt.Sprintf("capacity_reservations.%d.%s", i, k)]
			}
			require.GreaterOrEqual(t, r["start_date"], lastStart, "reservations earliest start first")
			lastStart = r["start_date"]
			out[r["id"]] = r
		}
		return out
	}
	offerings := func(s *terraform.State) []map[string]string {
		attrs := s.RootModule().Resources[address].Primary.Attributes
		n, err := strconv.Atoi(attrs["capacity_block_offerings.#"])
		require.NoError(t, err)
		var out []map[string]string
		for i := range n {
			o := map[string]string{}
			for _, k := range []string{"id", "instance_type", "gpu_product", "availability_zone", "instance_count", "duration_hours",
				"start_date", "end_date", "upfront_fee", "currency"} {
				o[k] = attrs[fmt.Sprintf("capacity_block_offerings.%d.%s", i, k)]
			}
			out = append(out, o)
		}
		return out
	}
	fee := func(o map[string]string) float64 {
		f, err := strconv.ParseFloat(o["upfront_fee"], 64)
		require.NoError(t, err)
		return f
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{ // both products and zones; offerings cheapest first
				Config: config(`gpu_products = ["H100", "A100"]`,
					`reservations = true
    details        = true
    offerings      = true
    instance_count = 2
    duration_hours = 48
    sort           = "price"`),
				Check: func(s *terraform.State) error {
					rs := reservations(s)
					require.Contains(t, rs, block)
					require.Contains(t, rs, odcr)
					b := rs[block]
					require.Equal(t, "p5.48xlarge", b["instance_type"])
					require.Equal(t, "H100", b["gpu_product"])
					require.Equal(t, "8", b["gpu_count"])
					require.Equal(t, "us-west-2a", b["availability_zone"])
					require.Equal(t, "capacity-block", b["reservation_type"])
					require.Equal(t, "targeted", b["instance_match_criteria"])
					require.Equal(t, "active", b["state"])
					require.Equal(t, "2", b["total_instances"])
					require.Equal(t, "2", b["available_instances"])
					require.Equal(t, blockStart.Format(time.RFC3339), b["start_date"])
					require.Equal(t, blockEnd.Format(time.RFC3339), b["end_date"])
					require.Contains(t, b["arn"], block)
					require.NotEmpty(t, b["capacity_block_id"])
					require.Equal(t, "ok", b["interconnect_status"], "details: the block's status")
					require.Equal(t, "3", b["network_nodes.#"], "details: p5 topology is three network nodes deep")
					o := rs[odcr]
					require.Equal(t, "A100", o["gpu_product"])
					require.Equal(t, "default", o["reservation_type"])
					require.Equal(t, "open", o["instance_match_criteria"])
					require.Equal(t, "4", o["total_instances"])
					require.Empty(t, o["end_date"], "an ODCR without an end date")

					os := offerings(s)
					require.NotEmpty(t, os, "the emulator offers p4d and p5 blocks")
					types := map[string]bool{}
					for i, off := range os {
						types[off["instance_type"]] = true
						require.Contains(t, []string{"H100", "A100"}, off["gpu_product"])
						require.Equal(t, "2", off["instance_count"])
						require.Equal(t, "48", off["duration_hours"])
						require.Equal(t, "USD", off["currency"])
						require.NotEmpty(t, off["id"])
						start, err := time.Parse(time.RFC3339, off["start_date"])
						require.NoError(t, err)
						end, err := time.Parse(time.RFC3339, off["end_date"])
						require.NoError(t, err)
						require.Equal(t, 48*time.Hour, end.Sub(start), off["id"])
						if i > 0 {
							require.GreaterOrEqual(t, fee(off), fee(os[i-1]), "cheapest first")
						}
					}
					require.True(t, types["p5.48xlarge"], "H100 blocks offered")
					require.True(t, types["p4d.24xlarge"], "A100 blocks offered")
					return nil
				},
			},
			{ // zone a, H100 only; offerings earliest first
				Config: config(`gpu_products = ["H100"]
    availability_zones = ["us-west-2a"]`,
					`reservations = true
    offerings      = true
    instance_count = 2
    duration_hours = 48
    sort           = "start"`),
				Check: func(s *terraform.State) error {
					rs := reservations(s)
					require.Contains(t, rs, block)
					require.NotContains(t, rs, odcr, "an A100 reservation in zone b")
					for _, r := range rs {
						require.Equal(t, "us-west-2a", r["availability_zone"])
						require.Equal(t, "H100", r["gpu_product"])
					}
					os := offerings(s)
					require.NotEmpty(t, os)
					for i, off := range os {
						require.Equal(t, "us-west-2a", off["availability_zone"])
						require.Equal(t, "H100", off["gpu_product"])
						if i > 0 {
							require.GreaterOrEqual(t, off["start_date"], os[i-1]["start_date"], "earliest first")
						}
					}
					return nil
				},
			},
			{ // at least 4 available instances: the block holds 2
				Config: config(`gpu_products = ["H100", "A100"]`, `reservations = true
    instance_count = 4`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(address, tfjsonpath.New("capacity_block_offerings"), knownvalue.Null()),
				},
				Check: func(s *terraform.State) error {
					rs := reservations(s)
					require.Contains(t, rs, odcr)
					require.NotContains(t, rs, block)
					return nil
				},
			},
		},
	})
}

// The example is applied as written but for the zones (the emulator's
// region is us-west-2): it finds H100 offerings of 2 instances for 2 days.
func TestAccInventoryDataSource_ec2CapacityExampleFindsAnOffering(t *testing.T) {
	testAccPreCheck(t)
	example := readExample(t, "examples", "data-sources", "gpu_inventory", "ec2_capacity.tf")
	require.Contains(t, example, "us-east-1a")
	example = strings.ReplaceAll(example, "us-east-1", "us-west-2")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: providerConfig() + example,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("cheapest_offering", knownvalue.ObjectPartial(map[string]knownvalue.Check{
					"gpu_product":    knownvalue.StringExact("H100"),
					"instance_count": knownvalue.Int64Exact(2),
					"duration_hours": knownvalue.Int64Exact(48),
					"currency":       knownvalue.StringExact("USD"),
				})),
				statecheck.ExpectKnownOutputValue("blocks_i_hold", knownvalue.NotNull()),
			},
		}},
	})
}
