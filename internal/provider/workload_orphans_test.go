package provider

import (
	"sync/atomic"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// A gpu_workload whose create is cut short after its Job exists stays in
// the state, tainted, so that the next apply replaces it and destroy
// removes it: nothing is left on the cluster that Terraform does not know.

func TestAccWorkload_createInterruptedKeepsTheJobTainted(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "wl-interrupted")
	// The H100 node's GPUs are taken: the Job waits for them.
	holdAllGPUs(t, ns, "gpu-p5-0", 8)
	config := h100Job(ns, "cut", `  timeouts {
    create = "10m"
  }`)
	var interrupted *atomic.Bool
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Ctrl-C once the Job exists.
			{
				PreConfig: func() {
					w, err := cluster.Client().BatchV1().Jobs(ns).Watch(t.Context(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "cut").String()})
					require.NoError(t, err)
					// The Job's create is one request: once the Job is
					// there, the apply waits for it.
					interrupted = interruptTerraformOnce(t, w, func(e watch.Event) bool { return e.Type == watch.Added })
				},
				Config:      config,
				ExpectError: wrapped("creating GPU workload (" + ns + "/cut)"),
			},
			expectTainted(config, "gpu_workload.cut"),
		},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
	require.True(t, interrupted.Load(), "Terraform was interrupted")
}
