package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// These tests write what a GPU health agent writes on a node (the
// AcceleratedHardwareReady condition with a status patch, the
// unhealthy-GPUs annotation) themselves: the subject is what the provider
// reads from them.

const accXID79Message = "XID 79 on GPU 3 (GPU-5f1c8f5e-0003, 00000000:9A:00.0): the GPU has fallen off the bus"

var accUnhealthyGPU3 = gpuhealth.UnhealthyGPU{
	GPURef: gpuhealth.GPURef{Index: 3, UUID: "GPU-5f1c8f5e-0003", PCIBusID: "00000000:9A:00.0"},
	Reason: gpuhealth.XIDErrorReason(79),
}

// healthAccNode registers a kwok p5.48xlarge node (8 H100s advertised,
// GFD's labels) labeled gpu-test=<label>, deleted when the test ends.
func healthAccNode(t *testing.T, name, label string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, cluster.AddNode(ctx, k8s.NodeSpec{Name: name, InstanceType: instanceType(t, "p5.48xlarge"), GFDLabeled: true,
		ExtraLabels: map[string]string{"gpu-test": label}}))
	t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), name)) })
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	require.NoError(t, cluster.WaitForNodesReady(waitCtx, name))
}

// reportNodeGPUHealth writes node's condition and annotation as a health
// agent does and returns the condition's lastTransitionTime.
func reportNodeGPUHealth(t *testing.T, node string, status corev1.ConditionStatus, reason, message string, unhealthy ...gpuhealth.UnhealthyGPU) time.Time {
	t.Helper()
	ctx := context.Background()
	client := cluster.Client()
	since := time.Now().UTC().Truncate(time.Second)
	var annotation any
	if len(unhealthy) > 0 {
		annotation = gpuhealth.EncodeUnhealthy(unhealthy)
	}
	meta, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{gpuhealth.AnnotationUnhealthyGPUs: annotation}}})
	require.NoError(t, err)
	_, err = client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, meta, metav1.PatchOptions{})
	require.NoError(t, err)
	cond, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: gpuhealth.ConditionType, Status: status, Reason: reason, Message: message,
		LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since),
	}}}})
	require.NoError(t, err)
	_, err = client.CoreV1().Nodes().PatchStatus(ctx, node, cond)
	require.NoError(t, err)
	return since
}

// healthRunSuffix tells one run's nodes and namespace from the previous
// run's, which may still be going away (go test -count=2).
func healthRunSuffix() string { return utilrand.String(5) }

func TestAccInventoryDataSource_kubernetesGPUHealth(t *testing.T) {
	testAccPreCheck(t)
	run := healthRunSuffix()
	label := "inventory-gpu-health-" + run
	faulty, ok, silent := "inv-health-faulty-"+run, "inv-health-ok-"+run, "inv-health-silent-"+run
	healthAccNode(t, faulty, label)
	healthAccNode(t, ok, label)
	healthAccNode(t, silent, label)
	ns := testNamespace(t, "inventory-gpu-health-"+run)
	holdGPUs(t, ns, "trainer", faulty, 2)
	xid := gpuhealth.XIDErrorReason(79)
	since := reportNodeGPUHealth(t, faulty, corev1.ConditionFalse, xid, accXID79Message, accUnhealthyGPU3)
	okSince := reportNodeGPUHealth(t, ok, corev1.ConditionTrue, gpuhealth.ReasonReady, "")

	config := providerConfig() + fmt.Sprintf(`
data "gpu_inventory" "health" {
  source = "kubernetes"
  filter {
    label_selector = "gpu-test=%s"
  }
}

data "gpu_inventory" "seven_free" {
  source = "kubernetes"
  filter {
    label_selector = "gpu-test=%s"
    min_free_gpus  = 7
  }
}
`, label, label)
	const ds = "data.gpu_inventory.health"
	str := knownvalue.StringExact
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Read: the faulty node's condition and unhealthy GPU; 8 H100s,
			// 2 held, 1 unhealthy: 5 free.
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					nodeAt(ds, faulty, "gpu_health", knownvalue.ObjectExact(map[string]knownvalue.Check{
						"status":  str("False"),
						"reason":  str(xid),
						"message": str(accXID79Message),
						"since":   str(since.Format(time.RFC3339)),
						"unhealthy_gpus": knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectExact(map[string]knownvalue.Check{
							"index": knownvalue.Int64Exact(3), "uuid": str("GPU-5f1c8f5e-0003"), "pci_bus_id": str("00000000:9A:00.0"), "reason": str(xid),
						})}),
					})),
					nodeAt(ds, faulty, "allocatable", knownvalue.Int64Exact(8)),
					nodeAt(ds, faulty, "allocated", knownvalue.Int64Exact(2)),
					nodeAt(ds, faulty, "free", knownvalue.Int64Exact(5)),
					nodeAt(ds, ok, "gpu_health", knownvalue.ObjectExact(map[string]knownvalue.Check{
						"status": str("True"), "reason": str(gpuhealth.ReasonReady), "message": str(""),
						"since": str(okSince.Format(time.RFC3339)), "unhealthy_gpus": knownvalue.ListExact(nil),
					})),
					nodeAt(ds, ok, "free", knownvalue.Int64Exact(8)),
					// No agent on the node: empty status, nothing listed.
					nodeAt(ds, silent, "gpu_health", knownvalue.ObjectExact(map[string]knownvalue.Check{
						"status": str(""), "reason": str(""), "message": str(""), "since": str(""), "unhealthy_gpus": knownvalue.ListExact(nil),
					})),
					nodeAt(ds, silent, "free", knownvalue.Int64Exact(8)),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("totals").AtMapKey("free"), knownvalue.Int64Exact(5+8+8)),
					// min_free_gpus follows the same free.
					nodeNames("data.gpu_inventory.seven_free", ok, silent),
				},
			},
		},
	})
}

func TestAccWorkload_diagnosisNamesGPUHealth(t *testing.T) {
	testAccPreCheck(t)
	run := healthRunSuffix()
	node, label := "wl-health-p5-"+run, "workload-gpu-health-"+run
	healthAccNode(t, node, label)
	ns := testNamespace(t, "wl-gpu-health-"+run)
	since := reportNodeGPUHealth(t, node, corev1.ConditionFalse, gpuhealth.XIDErrorReason(79), accXID79Message, accUnhealthyGPU3)
	config := providerConfig() + fmt.Sprintf(`
resource "gpu_workload" "crashes" {
  kind = "job"

  metadata {
    name      = "crashes"
    namespace = %q
    annotations = {
      %q = "1"
      %q = "CUDA error: unspecified launch failure"
    }
  }

  container {
    image = "nvcr.io/nvidia/pytorch:24.05-py3"
  }

  gpu {
    count = 1
  }

  node_selector = {
    "gpu-test" = %q
  }

  job {
    backoff_limit = 0
  }
}
`, ns, k8s.FailExitCodeAnnotation, k8s.FailMessageAnnotation, label)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Create: the pod crashes on the node whose GPU fell off the
			// bus, and the error says so with the node's condition.
			{
				Config: config,
				ExpectError: wrapped("the Job failed (BackoffLimitExceeded)", "on "+node+" ended: container main Error, exit code 1:",
					"GPU health: node "+node+": AcceleratedHardwareReady=False since", since.Format("15:04")+" ("+accXID79Message+")"),
			},
		},
		CheckDestroy: testAccCheckWorkloadsGone(ns),
	})
}
