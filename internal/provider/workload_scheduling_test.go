package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

func TestAccWorkload_impossibleFailsWithDiagnosis(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-impossible")
	job := func(gpuBlock string) string {
		return providerConfig() + fmt.Sprintf(`
resource "gpu_workload" "impossible" {
  kind = "job"
  metadata {
    name      = "impossible"
    namespace = %q
  }
  container {
    image = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
  }
  gpu {
%s
  }
  timeouts {
    create = "10m"
  }
}
`, ns, gpuBlock)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// A GPU model the cluster does not have. Each create has a
			// 10-minute timeout: an error that says "no node can ever run
			// it" (not "did not complete in time") came before it.
			{
				Config: job(`
    count    = 1
    products = ["NVIDIA-B200"]`),
				ExpectError: wrapped("no node can ever run it", "0 of 6 nodes can run it: 1 has no NVIDIA GPU (cpu-0), 5 are not in gpu.products [NVIDIA-B200]", "The scheduler says: 0/6 nodes are available"),
			},
			// More GPUs in one pod than any node has.
			{
				Config: job(`
    count = 16`),
				ExpectError: wrapped("no node can ever run it", "0 of 6 nodes can run it:",
					"5 have fewer than 16 nvidia.com/gpu allocatable in all (gpu-p4d-0: 8, gpu-p5-0: 8, gpu-g4dn-0: 1, gpu-g5-0: 1, gpu-g5-1: 1)"),
			},
		},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}

// h100Job is a gpu_workload "<name>": a Job in namespace that asks for two
// H100s, with extra in its body.
func h100Job(namespace, name, extra string) string {
	return providerConfig() + fmt.Sprintf(`
resource "gpu_workload" %q {
  kind = "job"
  metadata {
    name      = %q
    namespace = %q
  }
  container {
    image = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
  }
  gpu {
    count    = 2
    products = ["NVIDIA-H100-80GB-HBM3"]
  }
%s
}
`, name, name, namespace, extra)
}

func TestAccWorkload_busyGPUsWaitThenDiagnose(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-busy")
	holdAllGPUs(t, ns, "gpu-p5-0", 8)
	config := func(extra string) string { return h100Job(ns, "busy", extra) }
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// The H100 node matches but its GPUs are taken: wait for the timeout, then say so.
			{
				Config: config(`  timeouts {
    create = "15s"
  }`),
				ExpectError: wrapped("did not complete in time", "unschedulable", "1 lacks nvidia.com/gpu ≥ 2 free (gpu-p5-0: 0 free)", "Nodes that match are busy"),
			},
			// The Job it created is in the state, tainted: the next apply
			// replaces it (below), destroy removes it (CheckDestroy).
			expectTainted(config(`  timeouts {
    create = "15s"
  }`), "gpu_workload.busy"),
			// A Job that fails: its deadline passes while it waits for GPUs.
			{
				Config: config(`  job {
    active_deadline_seconds = 3
  }`),
				ExpectError: wrapped("the Job failed (DeadlineExceeded)"),
			},
		},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}
