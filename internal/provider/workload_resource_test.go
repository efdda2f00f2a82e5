package provider

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

func testAccWorkloadTrainJobConfig(namespace, ncclDebug, extra string) string {
	return providerConfig() + fmt.Sprintf(`
resource "gpu_workload" "train" {
  kind = "job"

  metadata {
    name      = "train"
    namespace = %q
    labels    = { team = "ml" }
  }

  container {
    image        = "nvcr.io/nvidia/pytorch:24.05-py3"
    command      = ["torchrun", "--nproc_per_node=2", "train.py"]
    env          = { NCCL_DEBUG = %q }
    cpu_request  = "8"
    memory_limit = "128Gi"
  }

  gpu {
    count    = 2
    products = ["NVIDIA-H100-80GB-HBM3"]
  }

  job {
    backoff_limit = 1
  }

  shm_size = "16Gi"

  volume {
    name       = "workspace"
    claim_name = "workspace"
    mount_path = "/workspace"
  }
%s
}
`, namespace, ncclDebug, extra)
}

func TestAccWorkload_jobCompletes(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-job-completes")
	testPVC(t, ns, "workspace")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Create and Read: only the H100 node qualifies.
			{
				Config: testAccWorkloadTrainJobConfig(ns, "INFO", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gpu_workload.train", tfjsonpath.New("id"), knownvalue.StringExact(ns+"/train")),
					statecheck.ExpectKnownValue("gpu_workload.train", tfjsonpath.New("status"), knownvalue.StringExact("Complete")),
					statecheck.ExpectKnownValue("gpu_workload.train", tfjsonpath.New("node_names"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("gpu-p5-0")})),
					statecheck.ExpectKnownValue("gpu_workload.train", tfjsonpath.New("succeeded"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue("gpu_workload.train", tfjsonpath.New("failed"), knownvalue.Int64Exact(0)),
					statecheck.ExpectKnownValue("gpu_workload.train", tfjsonpath.New("start_time"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue("gpu_workload.train", tfjsonpath.New("completion_time"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue("gpu_workload.train", tfjsonpath.New("job").AtMapKey("backoff_limit"), knownvalue.Int64Exact(1)),
				},
			},
			// ImportState: everything in the configuration reads back from the Job.
			{
				ResourceName:            "gpu_workload.train",
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
			// Update: only a wait setting changes, so the Job stays.
			{
				Config: testAccWorkloadTrainJobConfig(ns, "INFO", "  wait_for_completion = false"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("gpu_workload.train", plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gpu_workload.train", tfjsonpath.New("status"), knownvalue.StringExact("Complete")),
				},
			},
			// Replace: a Job's pod template is immutable, so a new env replaces it.
			{
				Config: testAccWorkloadTrainJobConfig(ns, "WARN", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("gpu_workload.train", plancheck.ResourceActionReplace)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gpu_workload.train", tfjsonpath.New("status"), knownvalue.StringExact("Complete")),
				},
				Check: func(*terraform.State) error {
					job, err := cluster.Client().BatchV1().Jobs(ns).Get(context.Background(), "train", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if env := job.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Value != "WARN" {
						return fmt.Errorf("the Job was not replaced: env %v", env)
					}
					return nil
				},
			},
		},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}

func TestAccWorkload_jobDeletedByTTLStaysDone(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-ttl")
	config := providerConfig() + fmt.Sprintf(`
resource "gpu_workload" "once" {
  kind = "job"
  metadata {
    name      = "once"
    namespace = %q
  }
  container {
    image = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
  }
  gpu {
    count = 1
  }
  job {
    ttl_seconds_after_finished = 0
  }
}
`, ns)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gpu_workload.once", tfjsonpath.New("status"), knownvalue.StringExact("Complete")),
				},
			},
			// Kubernetes deleted the finished Job as asked: that is not drift.
			{
				PreConfig: func() {
					err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
						_, err := cluster.Client().BatchV1().Jobs(ns).Get(ctx, "once", metav1.GetOptions{})
						return apierrors.IsNotFound(err), nil
					})
					require.NoError(t, err, "the TTL controller did not delete the finished Job")
				},
				Config:   config,
				PlanOnly: true,
			},
		},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}

func TestAccWorkload_drift(t *testing.T) {
	testAccPreCheck(t)
	t.Run("job deleted out of band is created again", func(t *testing.T) {
		ns := testNamespace(t, "wl-drift-job")
		config := providerConfig() + fmt.Sprintf(`
resource "gpu_workload" "train" {
  kind = "job"
  metadata {
    name      = "train"
    namespace = %q
  }
  container {
    image = "nvcr.io/nvidia/pytorch:24.05-py3"
  }
  gpu {
    count = 1
  }
}
`, ns)
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			Steps: []resource.TestStep{
				{Config: config},
				{
					PreConfig: func() {
						jobs := cluster.Client().BatchV1().Jobs(ns)
						foreground := metav1.DeletePropagationForeground
						require.NoError(t, jobs.Delete(context.Background(), "train", metav1.DeleteOptions{PropagationPolicy: &foreground}))
					},
					Config: config,
					ConfigPlanChecks: resource.ConfigPlanChecks{
						PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("gpu_workload.train", plancheck.ResourceActionCreate)},
					},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue("gpu_workload.train", tfjsonpath.New("status"), knownvalue.StringExact("Complete")),
					},
				},
			},
			CheckDestroy: testAccCheckWorkloadsGone(ns),
		})
	})
	t.Run("deployment image edited out of band is set back", func(t *testing.T) {
		ns := testNamespace(t, "wl-drift-deployment")
		config := testAccWorkloadDeploymentConfig(ns, "serve", "vllm/vllm-openai:v0.5.0", 1, "    count = 1")
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			Steps: []resource.TestStep{
				{Config: config},
				// Plan only: the edited image shows as a diff.
				{
					PreConfig: func() {
						// As `kubectl set image` does: a patch, which the Deployment
						// controller's concurrent status writes cannot conflict with.
						patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"vllm/vllm-openai:hotfix"}]}}}}`)
						_, err := cluster.Client().AppsV1().Deployments(ns).Patch(context.Background(), "serve", k8stypes.StrategicMergePatchType,
							patch, metav1.PatchOptions{FieldManager: "kubectl-edit"})
						require.NoError(t, err)
					},
					Config:             config,
					PlanOnly:           true,
					ExpectNonEmptyPlan: true,
				},
				// Apply: the configuration's image is back.
				{
					Config: config,
					ConfigPlanChecks: resource.ConfigPlanChecks{
						PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("gpu_workload.serve", plancheck.ResourceActionUpdate)},
					},
					Check: func(*terraform.State) error {
						dep, err := cluster.Client().AppsV1().Deployments(ns).Get(context.Background(), "serve", metav1.GetOptions{})
						if err != nil {
							return err
						}
						if got := dep.Spec.Template.Spec.Containers[0].Image; got != "vllm/vllm-openai:v0.5.0" {
							return fmt.Errorf("image is %s, want the configuration's vllm/vllm-openai:v0.5.0", got)
						}
						return nil
					},
				},
			},
			CheckDestroy: testAccCheckWorkloadsGone(ns),
		})
	})
}

func TestAccWorkload_invalidInput(t *testing.T) {
	testAccPreCheck(t)
	config := func(metadata, container, gpu, extra string) string {
		return providerConfig() + fmt.Sprintf(`
resource "gpu_workload" "bad" {
  kind = "job"
  metadata {
%s
  }
  container {
%s
  }
  gpu {
%s
  }
%s
}
`, metadata, container, gpu, extra)
	}
	name := `    name = "bad"`
	image := `    image = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"`
	one := `    count = 1`
	steps := []struct {
		config string
		err    string
	}{
		{config(name, image, `    count = 0`, ""), `(?s)gpu.count.*at least 1`},
		{config(name, image+"\n    cpu_request = \"lots\"", one, ""), `(?s)container.cpu_request "lots" is not a Kubernetes quantity`},
		{config(name, image+"\n    memory_limit = \"16GB\"", one, ""), `(?s)container.memory_limit "16GB" is not a Kubernetes quantity`},
		{config(name, image, one, `  shm_size = "lots"`), `(?s)shm_size "lots" is not a Kubernetes quantity`},
		{config(`    name = "Train_1"`, image, one, ""), `(?s)metadata.name "Train_1" is not a DNS-1123 subdomain`},
		{config(name+"\n    namespace = \"ML\"", image, one, ""), `(?s)metadata.namespace "ML" is not a DNS-1123 label`},
		{config(name, image, one, "  deployment {\n    replicas = 2\n  }"), `(?s)deployment block with kind = "job"`},
		{config(name, image, one, "  job {\n    restart_policy = \"Always\"\n  }"), `(?s)job.restart_policy.*value must be one of`},
		{config(name, image, one+"\n    min_compute_capability = \"8\"", ""), `(?s)gpu.min_compute_capability.*must be major.minor`},
		{config(name, image, one+"\n    shared = true\n    mig_profile = \"1g.10gb\"", ""), `(?s)gpu.mig_profile conflicts with gpu.shared`},
		{config(name, image+"\n    cpu_request = \"8\"\n    cpu_limit = \"4\"", one, ""), `(?s)container.cpu_request exceeds container.cpu_limit`},
		{config(name, image, one, `  wait_for_rollout = false`), `(?s)wait_for_rollout with kind = "job"`},
		{config(name, image, one+"\n    alternative {\n      count = 2\n    }", ""), `(?s)gpu.alternative without gpu.allocation = "dra"`},
		{config(name, image, one+"\n    allocation = \"dra\"\n    shared = true", ""), `(?s)gpu.shared with gpu.allocation = "dra"`},
		{config(name, image, one+"\n    allocation = \"mps\"", ""), `(?s)gpu.allocation.*value must be one of`},
		{config(name, image, one+"\n    min_cuda_version = \"12\"", ""), `(?s)gpu.min_cuda_version.*must be major.minor`},
	}
	var testSteps []resource.TestStep
	for _, s := range steps {
		testSteps = append(testSteps, resource.TestStep{Config: s.config, PlanOnly: true, ExpectError: regexp.MustCompile(s.err)})
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    testSteps,
	})
}

// TestAccWorkload_exampleValidates plans the documented example, so that it
// keeps up with the schema.
func TestAccWorkload_exampleValidates(t *testing.T) {
	testAccPreCheck(t)
	example, err := os.ReadFile("../../examples/resources/gpu_workload/resource.tf")
	require.NoError(t, err)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:             providerConfig() + string(example),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
		},
	})
}
