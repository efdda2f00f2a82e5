package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// A wait beyond ACTIVE that fails never replaces the group: here the
// device plugin does not tolerate the group's dedicated=training taint, so
// its GPUs are never advertised. The wait says so within seconds (not at
// its timeout), the create keeps the group untainted with ready_nodes and
// allocatable_gpus as reached, the next plan is an in-place update that
// waits again (failing again, as an error, while nothing changed), and
// once the plugin tolerates the taint that update brings the GPUs, with
// the same group.
func TestAccNodeGroup_failedWaitKeepsTheGroupAndWaitsAgainInPlace(t *testing.T) {
	testAccPreCheck(t)
	const name = "ng-rewait"
	ns := testNamespace(t, "ng-rewait") + "-plugin"
	config := func(tolerations string) string {
		return testAccNodeGroupConfig(name, `
  instance_types = ["p5.48xlarge"]
  wait_for       = "gpus_allocatable"
  taints         = [{ key = "dedicated", value = "training", effect = "NO_SCHEDULE" }]
  scaling {
    min_size     = 0
    max_size     = 1
    desired_size = 1
  }
  timeouts {
    create = "3m"
    update = "3m"
  }
  depends_on = [gpu_device_plugin.eks]
`) + fmt.Sprintf(`
resource "gpu_device_plugin" "eks" {
  namespace     = %q
  node_selector = { "eks.amazonaws.com/nodegroup" = %q }
  %s
}
`, ns, name, tolerations)
	}
	untolerated := config("")
	tolerated := config(`tolerations = [
    { key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" },
    { key = "dedicated", operator = "Equal", value = "training", effect = "NoSchedule" },
  ]`)
	var arn string
	sameGroup := statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("arn"), knownvalue.StringFunc(func(v string) error {
		if arn == "" {
			arn = v
		} else if v != arn {
			return fmt.Errorf("the node group was replaced: ARN %s, was %s", v, arn)
		}
		return nil
	}))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Create: EKS says ACTIVE, the wait fails early; a warning, no
			// error, so Terraform does not taint the group.
			{
				Config: untolerated,
				ConfigStateChecks: []statecheck.StateCheck{
					sameGroup,
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("status"), knownvalue.StringExact("ACTIVE")),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("ready_nodes"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(0)),
				},
				// The next plan waits again.
				ExpectNonEmptyPlan: true,
			},
			// The next plan updates in place (no replacement) to wait again;
			// nothing changed, so it fails again, early, naming the taint.
			{
				Config: untolerated,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(nodeGroupAddress, plancheck.ResourceActionUpdate),
						plancheck.ExpectUnknownValue(nodeGroupAddress, tfjsonpath.New("ready_nodes")),
					},
				},
				ExpectError: wrapped(`stopped waiting for node group "ng-rewait"`, "which cannot happen as configured",
					"no NVIDIA device plugin pod can run on node", "DaemonSet "+ns+"/nvidia-device-plugin does not tolerate its taint dedicated=training:NoSchedule",
					"Fix: add a toleration for dedicated=training:NoSchedule", "NOT tainted"),
			},
			// The plugin now tolerates the taint: the same group, updated in
			// place, waits again and has its 8 GPUs.
			{
				Config: tolerated,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nodeGroupAddress, plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					sameGroup,
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("ready_nodes"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(nodeGroupAddress, tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(8)),
				},
			},
			// Waited: nothing left to do.
			{
				Config: tolerated,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
		},
	})
}
