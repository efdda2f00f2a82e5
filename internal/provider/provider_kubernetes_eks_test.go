package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"
)

func TestKubernetesEKSConflictsWithOtherConnectionSettings(t *testing.T) {
	block := func() *kubernetesBlockModel {
		return &kubernetesBlockModel{
			ConfigPath: types.StringNull(), ConfigContext: types.StringNull(), Host: types.StringNull(), Token: types.StringNull(),
			ClusterCACertificate: types.StringNull(), ClientCertificate: types.StringNull(), ClientKey: types.StringNull(),
			Insecure: types.BoolNull(), AllowPlaintextCredentials: types.BoolNull(), UnreachableTimeout: types.StringNull(),
			EKS: &kubernetesEKSModel{ClusterName: types.StringValue("prod"), Region: types.StringNull()},
		}
	}
	require.False(t, block().validate().HasError(), "eks alone is valid")

	b := block()
	b.Host = types.StringValue("https://example.com")
	b.ConfigPath = types.StringValue("~/.kube/config")
	diags := b.validate()
	require.Len(t, diags, 2)
	require.Contains(t, errorDetails(diags), "kubernetes.config_path conflicts with kubernetes.eks")
	require.Contains(t, errorDetails(diags), "kubernetes.host conflicts with kubernetes.eks")

	b = block()
	b.EKS.ClusterName = types.StringNull()
	require.Contains(t, errorDetails(b.validate()), "kubernetes.eks.cluster_name is required")

	b = block()
	b.EKS.Region = types.StringValue("oregon")
	require.Contains(t, errorDetails(b.validate()), `kubernetes.eks.region "oregon" is not an AWS region name`)

	b = block()
	b.EKS.ClusterName = types.StringUnknown()
	require.False(t, b.validate().HasError(), "a cluster created in the same run is known at apply")
}

func TestAccKubernetesEKS_resourcesWorkWithoutKubeconfig(t *testing.T) {
	testAccPreCheck(t)
	// No kubeconfig anywhere: only the eks block can reach the cluster.
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	t.Setenv("KUBE_CONFIG_PATH", "")
	ns := testNamespace(t, "eks-access")
	devicePluginTestNodes(t, "eks-access", map[string]string{"eks-access-g5-0": "g5.xlarge"})
	emu.ResetCallCounts()
	config := fmt.Sprintf(`
provider "gpu" {
  kubernetes {
    eks {
      cluster_name = %q
    }
  }
}

resource "gpu_device_plugin" "test" {
  namespace     = "eks-access-plugin"
  node_selector = { "gpu-test" = "eks-access" }
}

resource "gpu_workload" "once" {
  kind = "job"
  metadata {
    name      = "once"
    namespace = %q
  }
  container {
    image = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
  }
  node_selector = { "gpu-test" = "eks-access" }
  gpu {
    count = 1
  }
  depends_on = [gpu_device_plugin.test]
}
`, emu.ClusterName(), ns)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("gpu_device_plugin.test", tfjsonpath.New("allocatable_gpus"), knownvalue.Int64Exact(1)),
				statecheck.ExpectKnownValue("gpu_workload.once", tfjsonpath.New("status"), knownvalue.StringExact("Complete")),
			},
		}},
	})
	calls := emu.CallCounts()
	require.Positive(t, calls["eks:DescribeCluster"], "the endpoint and CA came from EKS")
	require.Positive(t, calls["webhook:TokenReview"], "the API server authenticated EKS tokens")
}
