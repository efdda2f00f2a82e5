package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// failingWorkloadConfig is a workload whose containers exit with code 3 and
// a CUDA error as their termination message: the testbed's kwok stages make
// them, as a kubelet would report a container that crashed.
func failingWorkloadConfig(namespace, kind, settings string) string {
	return providerConfig() + fmt.Sprintf(`
resource "gpu_workload" "broken" {
  kind = %q

  metadata {
    name      = "broken"
    namespace = %q
    annotations = {
      %q = "3"
      %q = "CUDA error: no CUDA-capable device is detected"
    }
  }

  container {
    image = "nvcr.io/nvidia/pytorch:24.05-py3"
  }

  gpu {
    count = 1
  }
%s
}
`, kind, namespace, k8s.FailExitCodeAnnotation, k8s.FailMessageAnnotation, settings)
}

func TestAccWorkload_jobFailureNamesBackoffLimitAndTerminationMessage(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-job-fails")
	config := failingWorkloadConfig(ns, "job", `
  job {
    backoff_limit = 1
  }
`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Create: the kube-controller-manager fails the Job after two
			// failed pods, and the error says why, with the last pod's
			// exit code and termination message.
			{
				Config: config,
				ExpectError: wrapped("the Job failed (BackoffLimitExceeded)", "container main Error, exit code 3:",
					"CUDA error: no CUDA-capable device is detected"),
			},
			// The failed Job was created, so it is in the state (tainted),
			// not orphaned: a refresh reads it as Failed.
			{
				RefreshState:       true,
				ExpectNonEmptyPlan: true, // tainted: the next apply replaces it
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr("gpu_workload.broken", "status", "Failed"),
					resource.TestCheckResourceAttr("gpu_workload.broken", "failed", "2"),
				),
			},
		},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}

func TestAccWorkload_crashLoopingDeploymentIsDiagnosed(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-crashloop")
	config := failingWorkloadConfig(ns, "deployment", `
  timeouts {
    create = "20s"
  }
`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Create: the pod runs but its container keeps crashing; when
			// the timeout ends the rollout, the error shows the crash loop
			// and the container's last termination.
			{
				Config: config,
				ExpectError: regexp.MustCompile(`(?s)the rollout did not finish in time.*` +
					`CrashLoopBackOff\s+after\s+\d+\s+restarts;\s+last\s+ended\s+Error,\s+exit\s+code\s+3:\s+CUDA\s+error:\s+no\s+CUDA-capable\s+device\s+is\s+detected`),
			},
			{
				RefreshState:       true,
				ExpectNonEmptyPlan: true, // tainted: the next apply replaces it
				Check:              resource.TestCheckResourceAttr("gpu_workload.broken", "status", "Progressing"),
			},
		},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}
