package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"
)

const nodeGroupScalingBlock = `
  instance_types = ["g6.xlarge"]
  wait_for       = "active"
  scaling {
    min_size     = 0
    max_size     = 2
    desired_size = 0
  }
`

// repairBlocks is an update_config and node_repair_config of a group.
func repairBlocks(maxUnavailable int, strategy string, parallel string, action string) string {
	return fmt.Sprintf(`
  update_config {
    max_unavailable = %d
    update_strategy = %q
  }
  node_repair_config {
    enabled = true
    %s
    max_unhealthy_node_threshold_percentage = 20
    override {
      node_monitoring_condition = "AcceleratedHardwareReady"
      node_unhealthy_reason     = "NvidiaXID31Error"
      min_repair_wait_time_mins = 10
      repair_action             = %q
    }
  }
`, maxUnavailable, strategy, parallel, action)
}

func TestAccNodeGroup_updateStrategyAndRepairChangeInPlaceAndImport(t *testing.T) {
	testAccPreCheck(t)
	const name = "ng-repair"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Create and Read: EKS echoes the strategy and the repair config.
			{
				Config: testAccNodeGroupConfig(name, nodeGroupScalingBlock+repairBlocks(1, "DEFAULT", "max_parallel_nodes_repaired_count = 1", "Replace")),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("update_config").AtSliceIndex(0).AtMapKey("update_strategy"), knownvalue.StringExact("DEFAULT")),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("node_repair_config").AtSliceIndex(0).AtMapKey("max_parallel_nodes_repaired_count"), knownvalue.Int64Exact(1)),
				},
			},
			// Update and Read: in place, not a replacement.
			{
				Config: testAccNodeGroupConfig(name, nodeGroupScalingBlock+repairBlocks(2, "MINIMAL", "max_parallel_nodes_repaired_percentage = 50", "Reboot")),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nodeGroupAddress, plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("update_config").AtSliceIndex(0).AtMapKey("update_strategy"), knownvalue.StringExact("MINIMAL")),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("node_repair_config").AtSliceIndex(0).AtMapKey("max_parallel_nodes_repaired_percentage"), knownvalue.Int64Exact(50)),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("node_repair_config").AtSliceIndex(0).AtMapKey("max_parallel_nodes_repaired_count"), knownvalue.Null()),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("node_repair_config").AtSliceIndex(0).AtMapKey("override").AtSliceIndex(0).AtMapKey("repair_action"), knownvalue.StringExact("Reboot")),
				},
			},
			// The same configuration again: an empty plan (EKS's answer matches it).
			{
				Config:   testAccNodeGroupConfig(name, nodeGroupScalingBlock+repairBlocks(2, "MINIMAL", "max_parallel_nodes_repaired_percentage = 50", "Reboot")),
				PlanOnly: true,
			},
			// ImportState: the strategy and the repair config read back.
			{
				ResourceName:      nodeGroupAddress,
				ImportState:       true,
				ImportStateId:     emu.ClusterName() + ":" + name,
				ImportStateVerify: true,
				// wait_for and timeouts are not EKS's: an import takes their defaults, and with
				// wait_for's default ("ready") it reads the nodes that "active" left null.
				ImportStateVerifyIgnore: []string{"wait_for", "timeouts", "ready_nodes", "allocatable_gpus"},
			},
		},
	})
}

func TestAccNodeGroup_repairAndTaintsRejectedAtPlanWithNoWrite(t *testing.T) {
	testAccPreCheck(t)
	fiftyTaints := make([]string, 50)
	for i := range fiftyTaints {
		fiftyTaints[i] = fmt.Sprintf(`{ key = "team-%02d", value = "x", effect = "NO_SCHEDULE" }`, i)
	}
	for _, tc := range []struct {
		description string
		body        string
		want        string
	}{
		{"a taint key with a space", `taints = [{ key = "dedicated gpu", value = "x", effect = "NO_SCHEDULE" }]`, `taint key "dedicated gpu"`},
		{"a taint key that starts with a hyphen", `taints = [{ key = "-gpu", value = "x", effect = "NO_SCHEDULE" }]`, `taint key "-gpu"`},
		{"a taint key with a '!'", `taints = [{ key = "gpu!", value = "x", effect = "NO_SCHEDULE" }]`, `taint key "gpu!"`},
		{"a taint value with a space", `taints = [{ key = "gpu", value = "a b", effect = "NO_SCHEDULE" }]`, `taint value "a b"`},
		{"fifty taints and the GPU taint", "taints = [" + strings.Join(fiftyTaints, ",\n") + "]",
			`50 taints and gpu_taint adds nvidia.com/gpu=true:NO_SCHEDULE: 51, and EKS allows at most 50 per node group`},
		{"an unknown update strategy", "update_config {\n max_unavailable = 1\n update_strategy = \"FAST\"\n}", `update_strategy`},
		{"parallel repairs as a count and a percentage",
			"node_repair_config {\n enabled = true\n max_parallel_nodes_repaired_count = 1\n max_parallel_nodes_repaired_percentage = 10\n}",
			`max_parallel_nodes_repaired_count and max_parallel_nodes_repaired_percentage`},
		{"an unhealthy threshold over 100 percent",
			"node_repair_config {\n enabled = true\n max_unhealthy_node_threshold_percentage = 101\n}", `max_unhealthy_node_threshold_percentage`},
		{"an override without its wait", "node_repair_config {\n enabled = true\n override {\n node_monitoring_condition = \"KernelReady\"\n node_unhealthy_reason = \"KernelBug\"\n repair_action = \"Replace\"\n }\n}",
			`min_repair_wait_time_mins`},
		{"an override with an unknown action", "node_repair_config {\n enabled = true\n override {\n node_monitoring_condition = \"KernelReady\"\n node_unhealthy_reason = \"KernelBug\"\n min_repair_wait_time_mins = 5\n repair_action = \"Restart\"\n }\n}",
			`repair_action`},
	} {
		t.Run(tc.description, func(t *testing.T) {
			emu.ResetCallCounts()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      testAccNodeGroupConfig("ng-refused", nodeGroupScalingBlock+tc.body),
					PlanOnly:    true,
					ExpectError: wrappedText(tc.want),
				}},
			})
			require.Zero(t, emu.CallCounts()["eks:CreateNodegroup"], "nothing reached EKS")
		})
	}
}
