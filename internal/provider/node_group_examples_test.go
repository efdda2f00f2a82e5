package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"
)

// The examples plan on the testbed: their instance types pass the plan-time
// checks against the emulator's EC2, in its subnets.

func TestAccNodeGroup_resourceExamplePlans(t *testing.T) {
	testAccPreCheck(t)
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "resources", "gpu_node_group", "resource.tf"))
	require.NoError(t, err)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:             providerConfig() + string(example),
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
		}},
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
