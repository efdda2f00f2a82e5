package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"
)

// The examples are applied on the testbed: their instance types pass the
// plan-time checks against the emulator's EC2, in its subnets, and its
// node groups register kwok nodes into the testbed's cluster.

// examples/resources/gpu_node_group/resource.tf is applied as written, in
// the emulator's cluster rather than "prod": the device plugin tolerates
// the group's dedicated=training taint, so both p5.48xlarge nodes
// advertise their 8 GPUs when apply returns; the autoscaled group is
// ACTIVE with no nodes.
func TestAccNodeGroup_resourceExampleApplies(t *testing.T) {
	testAccPreCheck(t)
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "resources", "gpu_node_group", "resource.tf"))
	require.NoError(t, err)
	const prod = `cluster_name           = "prod"`
	require.Contains(t, string(example), prod)
	config := strings.ReplaceAll(string(example), `"prod"`, fmt.Sprintf("%q", emu.ClusterName()))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: providerConfig() + config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gpu_node_group.h100", tfjsonpath.New("status"), knownvalue.StringExact("ACTIVE")),
					statecheck.ExpectKnownValue("gpu_node_group.h100", tfjsonpath.New("ready_nodes"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue("gpu_node_group.h100", tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(16)),
					statecheck.ExpectKnownValue("gpu_node_group.autoscaled", tfjsonpath.New("status"), knownvalue.StringExact("ACTIVE")),
					statecheck.ExpectKnownValue("gpu_node_group.autoscaled", tfjsonpath.New("node_group_name"),
						knownvalue.StringRegexp(regexp.MustCompile(`^l4-`))),
				},
			},
			{
				Config: providerConfig() + config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			// import.sh's form: cluster_name:node_group_name.
			{
				ResourceName:            "gpu_node_group.h100",
				ImportState:             true,
				ImportStateId:           emu.ClusterName() + ":h100",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"wait_for", "timeouts"},
			},
		},
	})
}

// examples/eks is applied as written: the device plugin, two p5.48xlarge
// nodes ready with their 16 GPUs, and a job that takes them all, through
// kubernetes.eks with no kubeconfig.
func TestAccNodeGroup_eksExampleAppliesWithoutKubeconfig(t *testing.T) {
	testAccPreCheck(t)
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	main, err := os.ReadFile(filepath.Join("..", "..", "examples", "eks", "main.tf"))
	require.NoError(t, err)
	// The example's own terraform block names the provider; the explicit
	// host makes OpenTofu look where the tests serve it too.
	require.True(t, strings.Contains(string(main), `source = "gpuinfra/gpu"`))
	example := strings.Replace(string(main), `source = "gpuinfra/gpu"`, `source = "`+providerAddress+`"`, 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:          example,
			ConfigVariables: config.Variables{"cluster_name": config.StringVariable(emu.ClusterName())},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("allocatable_gpus", knownvalue.Int64Exact(16)),
				statecheck.ExpectKnownOutputValue("gpu", knownvalue.StringExact("8 x H100 (81920 MiB each)")),
				statecheck.ExpectKnownValue("gpu_workload.train", tfjsonpath.New("status"), knownvalue.StringExact("Complete")),
			},
		}},
	})
}
