package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/awsemu"
)

// The whole chain, with nothing written by the test but a GPU fault: the
// device plugin deploys gpu-bootstrap's health agent (run for each kwok
// node by the testbed's simulator, over an NVML double), an XID 79 fired
// on one GPU of one node of an EKS managed node group turns that node's
// condition False, the inventory and a workload's diagnosis say so, and
// once node_repair_config is on, the AWS emulator's node repair replaces
// the node with one whose agent reports healthy.

const healthE2EGroup = "ng-health"

// healthE2EConfig is the device plugin with its health agent, a group of
// two p5.48xlarge nodes and, after the fault, what reads it.
func healthE2EConfig(ns, repair, extra string) string {
	return testAccNodeGroupConfig(healthE2EGroup, fmt.Sprintf(`
  instance_types = ["p5.48xlarge"]
  wait_for       = "gpus_allocatable"
  scaling {
    min_size     = 0
    max_size     = 3
    desired_size = 2
  }
  timeouts {
    create = "4m"
    update = "4m"
  }
%s
  depends_on = [gpu_device_plugin.health]
`, repair)) + fmt.Sprintf(`
resource "gpu_device_plugin" "health" {
  namespace     = %q
  node_selector = { "eks.amazonaws.com/nodegroup" = %q }

  health_agent {
    image            = "registry.example.com/gpu-bootstrap:test"
    taint            = true
    damping_interval = "0s"
  }
}
%s`, ns, healthE2EGroup, extra)
}

const healthE2ERepair = `
  node_repair_config {
    enabled = true
    override {
      node_monitoring_condition = "AcceleratedHardwareReady"
      node_unhealthy_reason     = "NvidiaXID79Error"
      min_repair_wait_time_mins = 1
      repair_action             = "Replace"
    }
  }
`

// healthE2ENodes are the group's nodes, by name.
func healthE2ENodes(t *testing.T) []corev1.Node {
	t.Helper()
	list, err := cluster.Client().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{
		LabelSelector: "eks.amazonaws.com/nodegroup=" + healthE2EGroup,
	})
	require.NoError(t, err)
	nodes := list.Items
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return nodes
}

// waitForNodeHealth waits, watching the node for at most a minute, until
// its condition has status.
func waitForNodeHealth(t *testing.T, node string, status corev1.ConditionStatus) gpuhealth.NodeHealth {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nodes := cluster.Client().CoreV1().Nodes()
	var last gpuhealth.NodeHealth
	for ctx.Err() == nil {
		n, err := nodes.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			time.Sleep(100 * time.Millisecond) // a node being replaced; try again
			continue
		}
		if last = gpuhealth.ReadNode(n); last.Reported && last.Status == status {
			return last
		}
		w, err := nodes.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + node, ResourceVersion: n.ResourceVersion})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if n, ok := ev.Object.(*corev1.Node); ok {
				if last = gpuhealth.ReadNode(n); last.Reported && last.Status == status {
					w.Stop()
					return last
				}
			}
		}
	}
	require.FailNowf(t, "node health", "node %s: condition %+v, waited for %s", node, last, status)
	return last
}

func TestAccGPUHealth_faultReachesInventoryDiagnosisAndNodeRepair(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "gpu-health-e2e")
	plugin := ns + "-plugin"
	// One "minute" of EKS's repair wait lasts 200 ms here.
	emu.SetRepairMinute(200 * time.Millisecond)
	t.Cleanup(func() { emu.SetRepairMinute(time.Minute) })

	var faulty, healthy string
	inventory := fmt.Sprintf(`
data "gpu_inventory" "group" {
  source = "kubernetes"
  filter {
    label_selector = "eks.amazonaws.com/nodegroup=%s"
  }
}
`, healthE2EGroup)
	// The job is pinned to the node the inventory reports unhealthy.
	pinned := fmt.Sprintf(`
resource "gpu_workload" "pinned" {
  kind = "job"
  metadata {
    name      = "pinned"
    namespace = %q
  }
  container {
    image = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
  }
  gpu {
    count = 1
  }
  node_selector = {
    "kubernetes.io/hostname" = one([for n in data.gpu_inventory.group.nodes : n.name if n.gpu_health.status == "False"])
  }
  timeouts {
    create = "20s"
  }
}
`, ns)

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Create: the plugin and its agent, then two nodes; every
			// node's agent reports healthy.
			{
				Config: healthE2EConfig(plugin, "", ""),
				Check: func(*terraform.State) error {
					nodes := healthE2ENodes(t)
					require.Len(t, nodes, 2)
					for _, n := range nodes {
						h := waitForNodeHealth(t, n.Name, corev1.ConditionTrue)
						require.Equal(t, gpuhealth.ReasonReady, h.Reason)
					}
					faulty, healthy = nodes[0].Name, nodes[1].Name
					return nil
				},
			},
			// GPU 3 of one node falls off the bus: the inventory shows the
			// node's condition and leaves the GPU out of free.
			{
				PreConfig: func() {
					require.NoError(t, cluster.FireXID(context.Background(), faulty, 3, 79))
					h := waitForNodeHealth(t, faulty, corev1.ConditionFalse)
					require.Equal(t, gpuhealth.XIDErrorReason(79), h.Reason)
				},
				Config: healthE2EConfig(plugin, "", inventory),
				Check: func(s *terraform.State) error {
					// The nodes' names are known only now: flatmap reads.
					attrs := s.RootModule().Resources["data.gpu_inventory.group"].Primary.Attributes
					bad, good := "nodes."+faulty, "nodes."+healthy
					require.Equal(t, "False", attrs[bad+".gpu_health.status"])
					require.Equal(t, gpuhealth.XIDErrorReason(79), attrs[bad+".gpu_health.reason"])
					require.Contains(t, attrs[bad+".gpu_health.message"], "XID 79 on GPU 3")
					require.Equal(t, "1", attrs[bad+".gpu_health.unhealthy_gpus.#"])
					require.Equal(t, "3", attrs[bad+".gpu_health.unhealthy_gpus.0.index"])
					require.Equal(t, "8", attrs[bad+".allocatable"])
					require.Equal(t, "7", attrs[bad+".free"])
					require.Equal(t, "True", attrs[good+".gpu_health.status"])
					require.Equal(t, "8", attrs[good+".free"])
					require.Equal(t, "15", attrs["totals.free"])
					return nil
				},
			},
			// A job pinned to that node cannot start there (the agent's
			// taint), and the error names the node's GPU health.
			{
				Config:      healthE2EConfig(plugin, "", inventory) + pinned,
				ExpectError: wrapped("GPU health: node", "AcceleratedHardwareReady=False since", "XID 79 on GPU 3"),
			},
			// Node repair on: EKS's repair replaces the node after the
			// override's wait; the new node's agent reports healthy.
			{
				Config: healthE2EConfig(plugin, healthE2ERepair, ""),
				Check: func(*terraform.State) error {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					for {
						status, err := emu.NodeRepairStatus(emu.ClusterName(), healthE2EGroup)
						require.NoError(t, err)
						if i := slices.IndexFunc(status.Repairs, func(r awsemu.NodeRepair) bool { return r.Node == faulty && !r.Finished.IsZero() }); i >= 0 {
							require.Equal(t, "Replace", status.Repairs[i].Action)
							require.Equal(t, gpuhealth.XIDErrorReason(79), status.Repairs[i].Reason)
							break
						}
						select {
						case <-ctx.Done():
							return fmt.Errorf("node %s not repaired: %+v", faulty, status)
						case <-time.After(200 * time.Millisecond):
						}
					}
					nodes := healthE2ENodes(t)
					names := make([]string, 0, len(nodes))
					for _, n := range nodes {
						names = append(names, n.Name)
					}
					require.NotContains(t, names, faulty)
					require.Contains(t, names, healthy)
					require.Len(t, nodes, 2)
					for _, n := range nodes {
						waitForNodeHealth(t, n.Name, corev1.ConditionTrue)
					}
					return nil
				},
			},
		},
	})
}
