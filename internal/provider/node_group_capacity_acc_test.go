package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/awsemu"
)

// The emulator's subnet in us-west-2b (see testSubnetsABC).
const testSubnetB = `["subnet-0a1b2c3d4e5f60002"]`

// capacityWrites are the calls a refused plan must not have made.
var capacityWrites = []string{"ec2:CreateLaunchTemplate", "ec2:CreateLaunchTemplateVersion", "eks:CreateNodegroup", "eks:UpdateNodegroupVersion"}

func seedReservation(t *testing.T, s awsemu.CapacityReservationSeed) string {
	t.Helper()
	id, err := emu.AddCapacityReservation(s)
	require.NoError(t, err)
	return id
}

func TestAccNodeGroup_capacityReservationRefusedAtPlanWithNothingCreated(t *testing.T) {
	testAccPreCheck(t)
	zone := func(z string) string { return emu.Region() + z }
	now := time.Now()
	wrongZone := seedReservation(t, awsemu.CapacityReservationSeed{InstanceType: "p5.48xlarge", AvailabilityZone: zone("a"), Count: 2, Block: true, End: now.Add(48 * time.Hour)})
	wrongType := seedReservation(t, awsemu.CapacityReservationSeed{InstanceType: "p4d.24xlarge", AvailabilityZone: zone("b"), Count: 2})
	tooSmall := seedReservation(t, awsemu.CapacityReservationSeed{InstanceType: "p5.48xlarge", AvailabilityZone: zone("b"), Count: 1, Block: true, End: now.Add(48 * time.Hour)})
	expired := seedReservation(t, awsemu.CapacityReservationSeed{InstanceType: "p5.48xlarge", AvailabilityZone: zone("b"), Count: 2, Block: true, End: now.Add(48 * time.Hour)})
	require.NoError(t, emu.EndCapacityReservation(expired))

	for _, tc := range []struct {
		description, capacityType, reservation, want string
	}{
		{"a block in another zone", "CAPACITY_BLOCK", wrongZone, "is in " + zone("a") + ", and no subnet of subnet_ids is"},
		{"a reservation of another type", "ON_DEMAND", wrongType, `reserves p4d.24xlarge, which is not among instance_types (p5.48xlarge)`},
		{"a block too small for desired_size", "CAPACITY_BLOCK", tooSmall, "desired_size 2 is more than Capacity Block " + tooSmall},
		{"a block that has ended", "CAPACITY_BLOCK", expired, "Capacity Block " + expired},
	} {
		t.Run(tc.description, func(t *testing.T) {
			emu.ResetCallCounts()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      capacityGroupConfig("ng-cap-refused", tc.capacityType, tc.reservation, testSubnetB, 2),
					PlanOnly:    true, // refused by the plan, not by the apply's own check
					ExpectError: wrappedText(tc.want),
				}},
			})
			calls := emu.CallCounts()
			require.Positive(t, calls["ec2:DescribeCapacityReservations"], "the plan asked EC2")
			for _, write := range capacityWrites {
				require.Zero(t, calls[write], "%s called by a plan that failed", write)
			}
		})
	}
}

// capacityGroupConfig is a p5.48xlarge group in reservation id.
func capacityGroupConfig(name, capacityType, id, subnets string, desired int) string {
	return providerConfig() + fmt.Sprintf(`
resource "gpu_node_group" "test" {
  cluster_name    = %q
  node_group_name = %q
  node_role_arn   = %q
  subnet_ids      = %s
  instance_types  = ["p5.48xlarge"]
  capacity_type   = %q
  capacity_reservation {
    id = %q
  }
  scaling {
    min_size     = 0
    max_size     = 4
    desired_size = %d
  }
}
`, emu.ClusterName(), name, testNodeRole, subnets, capacityType, id, desired)
}

func TestAccNodeGroup_capacityBlockComesUpMovesToANewBlockImportsAndLosesItsNodesAtTheEnd(t *testing.T) {
	testAccPreCheck(t)
	const name = "ng-cap-block"
	end := time.Now().Add(20 * time.Hour).UTC().Truncate(time.Second)
	first := seedReservation(t, awsemu.CapacityReservationSeed{InstanceType: "p5.48xlarge", AvailabilityZone: emu.Region() + "b", Count: 2, Block: true, End: end})
	second := seedReservation(t, awsemu.CapacityReservationSeed{InstanceType: "p5.48xlarge", AvailabilityZone: emu.Region() + "b", Count: 2, Block: true, End: end.Add(24 * time.Hour)})
	attr := func(p ...string) tfjsonpath.Path {
		out := tfjsonpath.New("capacity_reservation").AtSliceIndex(0)
		for _, s := range p {
			out = out.AtMapKey(s)
		}
		return out
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if emu.CallCounts()["ec2:DeleteLaunchTemplate"] == 0 {
				return fmt.Errorf("destroy deleted no launch template")
			}
			return nil
		},
		Steps: []resource.TestStep{
			// Create and Read: two nodes in the block, which ends within
			// expiry_warning (the plan warns), shown with its end.
			{
				Config: capacityGroupConfig(name, "CAPACITY_BLOCK", first, testSubnetB, 2),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("ready_nodes"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("instance_types"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("p5.48xlarge")})),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("launch_template"), knownvalue.ListSizeExact(0)),
					statecheck.ExpectKnownValue(nodeGroupAddress, attr("end"), knownvalue.StringExact(end.Format(time.RFC3339))),
					statecheck.ExpectKnownValue(nodeGroupAddress, attr("state"), knownvalue.StringExact("active")),
					statecheck.ExpectKnownValue(nodeGroupAddress, attr("reservation_type"), knownvalue.StringExact("capacity-block")),
					statecheck.ExpectKnownValue(nodeGroupAddress, attr("availability_zone"), knownvalue.StringExact(emu.Region()+"b")),
					statecheck.ExpectKnownValue(nodeGroupAddress, attr("launch_template_id"), knownvalue.StringRegexp(regexp.MustCompile(`^lt-`))),
				},
			},
			// ImportState: the provider's own template is recognized, and
			// the import plans nothing.
			{
				ResourceName:    nodeGroupAddress,
				ImportState:     true,
				ImportStateKind: resource.ImportBlockWithID,
				ImportStateId:   emu.ClusterName() + ":" + name,
			},
			// Update and Read: a new block is a new template version,
			// rolled out in place.
			{
				Config: capacityGroupConfig(name, "CAPACITY_BLOCK", second, testSubnetB, 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nodeGroupAddress, plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, attr("id"), knownvalue.StringExact(second)),
					statecheck.ExpectKnownValue(nodeGroupAddress, attr("launch_template_version"), knownvalue.StringExact("2")),
					statecheck.ExpectKnownValue(nodeGroupAddress, attr("end"), knownvalue.StringExact(end.Add(24*time.Hour).Format(time.RFC3339))),
				},
			},
			// The block ends: refresh shows the group without its nodes.
			{
				PreConfig:    func() { require.NoError(t, emu.EndCapacityReservation(second)) },
				RefreshState: true,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(nodeGroupAddress, "capacity_reservation.0.state", "expired"),
					resource.TestCheckResourceAttr(nodeGroupAddress, "ready_nodes", "0"),
				),
			},
		},
	})
}

// examples/eks-capacity-block is applied as written, into a block the test
// seeds: two nodes come up, and the output shows the block's end.
func TestAccNodeGroup_eksCapacityBlockExampleApplies(t *testing.T) {
	testAccPreCheck(t)
	end := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Second)
	id := seedReservation(t, awsemu.CapacityReservationSeed{InstanceType: "p5.48xlarge", AvailabilityZone: emu.Region() + "b", Count: 2, Block: true, End: end})
	main, err := os.ReadFile(filepath.Join("..", "..", "examples", "eks-capacity-block", "main.tf"))
	require.NoError(t, err)
	require.Contains(t, string(main), `source = "gpuinfra/gpu"`)
	example := strings.Replace(string(main), `source = "gpuinfra/gpu"`, `source = "`+providerAddress+`"`, 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: example,
			ConfigVariables: config.Variables{
				"cluster_name":      config.StringVariable(emu.ClusterName()),
				"capacity_block_id": config.StringVariable(id),
			},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("ready_nodes", knownvalue.Int64Exact(2)),
				statecheck.ExpectKnownOutputValue("block_ends", knownvalue.StringExact(end.Format(time.RFC3339))),
			},
		}},
	})
}
