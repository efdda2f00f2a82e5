package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

func testAccWorkloadDeploymentConfig(namespace, name, image string, replicas int, gpuBlock string) string {
	return providerConfig() + fmt.Sprintf(`
resource "gpu_workload" "serve" {
  kind = "deployment"

  metadata {
    name      = %q
    namespace = %q
  }

  container {
    image = %q
  }

  gpu {
%s
  }

  deployment {
    replicas = %d
  }
}
`, name, namespace, image, gpuBlock, replicas)
}

func TestAccWorkload_minMemoryExcludesSmallGPUs(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-min-memory")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Create and Read: three 1-GPU replicas, none on the 16 and 24 GB GPUs.
			{
				Config: testAccWorkloadDeploymentConfig(ns, "serve", "nvcr.io/nvidia/tritonserver:24.05-py3", 3, `
    count          = 1
    min_memory_gib = 40`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gpu_workload.serve", tfjsonpath.New("status"), knownvalue.StringExact("Available")),
					statecheck.ExpectKnownValue("gpu_workload.serve", tfjsonpath.New("node_names"), nonEmptySubsetOf{"gpu-p4d-0", "gpu-p5-0"}),
					statecheck.ExpectKnownValue("gpu_workload.serve", tfjsonpath.New("succeeded"), knownvalue.Null()),
				},
				Check: func(*terraform.State) error {
					pods, err := cluster.Client().CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: kube.WorkloadLabel + "=serve"})
					if err != nil {
						return err
					}
					if len(pods.Items) != 3 {
						return fmt.Errorf("want 3 pods, got %d", len(pods.Items))
					}
					for _, p := range pods.Items {
						if p.Spec.NodeName != "gpu-p5-0" && p.Spec.NodeName != "gpu-p4d-0" {
							return fmt.Errorf("pod %s runs on %s, which has less than 40 GiB per GPU", p.Name, p.Spec.NodeName)
						}
					}
					return nil
				},
			},
		},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}

func TestAccWorkload_deploymentUpdatesInPlace(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-update")
	var uid k8stypes.UID
	deployment := func() (*appsv1.Deployment, error) {
		return cluster.Client().AppsV1().Deployments(ns).Get(context.Background(), "serve", metav1.GetOptions{})
	}
	sameDeployment := func(image string, replicas int32, strategy appsv1.DeploymentStrategyType) resource.TestCheckFunc {
		return func(*terraform.State) error {
			dep, err := deployment()
			if err != nil {
				return err
			}
			if dep.UID != uid {
				return fmt.Errorf("the Deployment was replaced: UID %s, was %s", dep.UID, uid)
			}
			if got := dep.Spec.Template.Spec.Containers[0].Image; got != image {
				return fmt.Errorf("image is %s, want %s", got, image)
			}
			if *dep.Spec.Replicas != replicas || dep.Status.AvailableReplicas != replicas || dep.Status.UpdatedReplicas != replicas {
				return fmt.Errorf("replicas %d, available %d, updated %d; want %d", *dep.Spec.Replicas, dep.Status.AvailableReplicas, dep.Status.UpdatedReplicas, replicas)
			}
			if dep.Spec.Strategy.Type != strategy {
				return fmt.Errorf("strategy is %s, want %s", dep.Spec.Strategy.Type, strategy)
			}
			return nil
		}
	}
	config := func(image string, replicas int, strategy string) string {
		return providerConfig() + fmt.Sprintf(`
resource "gpu_workload" "serve" {
  kind = "deployment"
  metadata {
    name      = "serve"
    namespace = %q
  }
  container {
    image = %q
  }
  gpu {
    count          = 1
    min_memory_gib = 40
  }
  deployment {
    replicas = %d
    strategy = %q
  }
}
`, ns, image, replicas, strategy)
	}
	bigGPUs := nonEmptySubsetOf{"gpu-p4d-0", "gpu-p5-0"}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Create and Read
			{
				Config: config("vllm/vllm-openai:v0.5.0", 1, "RollingUpdate"),
				Check: func(*terraform.State) error {
					dep, err := deployment()
					if err != nil {
						return err
					}
					uid = dep.UID
					return nil
				},
			},
			// Update and Read: a new image and a second replica, same Deployment.
			{
				Config: config("vllm/vllm-openai:v0.5.1", 2, "RollingUpdate"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("gpu_workload.serve", plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gpu_workload.serve", tfjsonpath.New("status"), knownvalue.StringExact("Available")),
					statecheck.ExpectKnownValue("gpu_workload.serve", tfjsonpath.New("node_names"), bigGPUs),
				},
				Check: sameDeployment("vllm/vllm-openai:v0.5.1", 2, appsv1.RollingUpdateDeploymentStrategyType),
			},
			// Update and Read: Recreate, which Kubernetes rejects next to the
			// rollingUpdate parameters it defaulted, and another image.
			{
				Config: config("vllm/vllm-openai:v0.5.2", 2, "Recreate"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("gpu_workload.serve", plancheck.ResourceActionUpdate)},
				},
				Check: sameDeployment("vllm/vllm-openai:v0.5.2", 2, appsv1.RecreateDeploymentStrategyType),
			},
			// ImportState: "deployment/namespace/name" names the kind.
			{
				ResourceName:            "gpu_workload.serve",
				ImportState:             true,
				ImportStateId:           "deployment/" + ns + "/serve",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
		},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}

func TestAccWorkload_rollingUpdateWithoutSpareGPUsIsDiagnosed(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-rollout-stuck")
	config := func(image string) string {
		return providerConfig() + fmt.Sprintf(`
resource "gpu_workload" "serve" {
  kind = "deployment"
  metadata {
    name      = "serve"
    namespace = %q
  }
  container {
    image = %q
  }
  gpu {
    count    = 1
    products = ["NVIDIA-A10G"]
  }
  deployment {
    replicas = 2
  }
  timeouts {
    update = "15s"
  }
}
`, ns, image)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Both A10G nodes' only GPU is taken by the two replicas.
			{Config: config("vllm/vllm-openai:v0.5.0")},
			// A new image needs a third A10G for the surge pod: stuck, and said why.
			{
				Config:      config("vllm/vllm-openai:v0.5.1"),
				ExpectError: wrapped("the rollout did not finish in time", "2 lack nvidia.com/gpu ≥ 1 free", `Set deployment.strategy = "Recreate"`),
			},
		},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}
