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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func suspendedJobConfig(namespace string, parallelism int, suspend bool, completions int) string {
	return providerConfig() + fmt.Sprintf(`
resource "gpu_workload" "sweep" {
  kind = "job"

  metadata {
    name      = "sweep"
    namespace = %q
  }

  container {
    image = "nvcr.io/nvidia/pytorch:24.05-py3"
  }

  gpu {
    count = 1
  }

  job {
    parallelism             = %d
    completions             = %d
    suspend                 = %t
    active_deadline_seconds = 3600
  }
}
`, namespace, parallelism, completions, suspend)
}

func TestAccWorkload_jobSettingsUpdateInPlace(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-job-inplace")
	uid := ""
	sameJob := func(*terraform.State) error {
		job, err := cluster.Client().BatchV1().Jobs(ns).Get(context.Background(), "sweep", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if uid == "" {
			uid = string(job.UID)
		} else if string(job.UID) != uid {
			return fmt.Errorf("the Job was replaced (uid %s, was %s)", job.UID, uid)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Create suspended: nothing runs, and nothing is waited for.
			{
				Config: suspendedJobConfig(ns, 1, true, 4),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gpu_workload.sweep", tfjsonpath.New("status"), knownvalue.StringExact("Suspended")),
				},
				Check: sameJob,
			},
			// Update: parallelism and suspend change in place; the Job runs
			// to completion and is the same Job.
			{
				Config: suspendedJobConfig(ns, 2, false, 4),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("gpu_workload.sweep", plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gpu_workload.sweep", tfjsonpath.New("status"), knownvalue.StringExact("Complete")),
					statecheck.ExpectKnownValue("gpu_workload.sweep", tfjsonpath.New("succeeded"), knownvalue.Int64Exact(4)),
				},
				Check: resource.ComposeTestCheckFunc(sameJob, func(*terraform.State) error {
					job, err := cluster.Client().BatchV1().Jobs(ns).Get(context.Background(), "sweep", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if *job.Spec.Parallelism != 2 {
						return fmt.Errorf("parallelism is %d, want 2", *job.Spec.Parallelism)
					}
					return nil
				}),
			},
			// Completions cannot change on a Job: it is replaced.
			{
				Config: suspendedJobConfig(ns, 2, false, 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("gpu_workload.sweep", plancheck.ResourceActionReplace)},
				},
			},
		},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}
