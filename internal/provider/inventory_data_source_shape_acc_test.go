package provider

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

func TestAccInventoryDataSource_includeLabelsAndNodes(t *testing.T) {
	testAccPreCheck(t)
	const p5 = "gpu-p5-0"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Read: labels by key, by prefix, all of them; and no nodes at all.
			{
				Config: providerConfig() + `
data "gpu_inventory" "keys" {
  source         = "kubernetes"
  include_labels = ["node.kubernetes.io/instance-type", "nvidia.com/gpu.family", "absent.example.com/key"]
}

data "gpu_inventory" "prefix" {
  source         = "kubernetes"
  include_labels = ["nvidia.com/gpu.compute.*"]
}

data "gpu_inventory" "every_label" {
  source         = "kubernetes"
  include_labels = ["*"]
}

data "gpu_inventory" "sums_only" {
  source        = "kubernetes"
  include_nodes = false
  filter {
    product = "A10G|T4"
  }
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					// Exactly the keys asked for that the node has; a key it lacks is not invented.
					nodeAt("data.gpu_inventory.keys", p5, "labels", knownvalue.MapExact(map[string]knownvalue.Check{
						"node.kubernetes.io/instance-type": knownvalue.StringExact("p5.48xlarge"),
						"nvidia.com/gpu.family":            knownvalue.StringExact("hopper"),
					})),
					nodeAt("data.gpu_inventory.prefix", p5, "labels", knownvalue.MapExact(map[string]knownvalue.Check{
						"nvidia.com/gpu.compute.major": knownvalue.StringExact("9"),
						"nvidia.com/gpu.compute.minor": knownvalue.StringExact("0"),
					})),
					// "*" is what every plan carried before: kubelet's labels too.
					nodeAt("data.gpu_inventory.every_label", p5, "labels", knownvalue.MapPartial(map[string]knownvalue.Check{
						"kubernetes.io/hostname": knownvalue.StringExact(p5),
						"nvidia.com/gpu.product": knownvalue.StringExact("NVIDIA-H100-80GB-HBM3"),
					})),
					// No nodes, and still the filtered sums. (Pods of other tests
					// may still be terminating and hold GPUs: capacity only.)
					statecheck.ExpectKnownValue("data.gpu_inventory.sums_only", tfjsonpath.New("nodes"), knownvalue.Null()),
					statecheck.ExpectKnownValue("data.gpu_inventory.sums_only", tfjsonpath.New("totals"), capacity(3, 3)),
					statecheck.ExpectKnownValue("data.gpu_inventory.sums_only", tfjsonpath.New("by_product"), knownvalue.MapExact(map[string]knownvalue.Check{
						"NVIDIA-A10G": capacity(2, 2),
						"Tesla-T4":    capacity(1, 1),
					})),
				},
			},
		},
	})
}

// capacity checks the nodes and GPUs of a `totals` or `by_product` entry.
func capacity(nodes, gpus int64) knownvalue.Check {
	return knownvalue.ObjectPartial(map[string]knownvalue.Check{"nodes": knownvalue.Int64Exact(nodes), "gpus": knownvalue.Int64Exact(gpus)})
}

// TestAccInventoryDataSource_nodeJoiningOrLeavingChangesOneKey shows why
// `nodes` is a map: the plan's change to an output holding it names the
// node that came or went and no other, where a list sorted by name would
// shift every element after it.
func TestAccInventoryDataSource_nodeJoiningOrLeavingChangesOneKey(t *testing.T) {
	testAccPreCheck(t)
	ctx := context.Background()
	label := map[string]string{"gpu-test": "inventory-churn"}
	addNode := func(name string) {
		require.NoError(t, cluster.AddNode(ctx, k8s.NodeSpec{Name: name, InstanceType: instanceType(t, "g5.xlarge"), GFDLabeled: true, ExtraLabels: label}))
		t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), name)) })
		require.NoError(t, cluster.WaitForNodesReady(ctx, name))
	}
	addNode("inv-churn-a")
	addNode("inv-churn-c")

	config := providerConfig() + `
data "gpu_inventory" "churn" {
  source = "kubernetes"
  filter {
    label_selector = "gpu-test=inventory-churn"
  }
}

output "nodes" {
  value = data.gpu_inventory.churn.nodes
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:            config,
				ConfigStateChecks: []statecheck.StateCheck{nodeNames("data.gpu_inventory.churn", "inv-churn-a", "inv-churn-c")},
			},
			// A node joins between a and c: one key added, a and c unchanged.
			{
				PreConfig: func() { addNode("inv-churn-b") },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectOutputMapKeysChanged{output: "nodes", added: []string{"inv-churn-b"}},
				}},
				ConfigStateChecks: []statecheck.StateCheck{nodeNames("data.gpu_inventory.churn", "inv-churn-a", "inv-churn-b", "inv-churn-c")},
			},
			// The first node leaves: one key removed, b and c unchanged.
			{
				PreConfig: func() { require.NoError(t, cluster.DeleteNode(ctx, "inv-churn-a")) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectOutputMapKeysChanged{output: "nodes", removed: []string{"inv-churn-a"}},
				}},
				ConfigStateChecks: []statecheck.StateCheck{nodeNames("data.gpu_inventory.churn", "inv-churn-b", "inv-churn-c")},
			},
		},
	})
}

// expectOutputMapKeysChanged checks a plan's change to a map-valued output:
// exactly the keys added and removed, and every other key's value unchanged.
type expectOutputMapKeysChanged struct {
	output         string
	added, removed []string
}

func (e expectOutputMapKeysChanged) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	change, ok := req.Plan.OutputChanges[e.output]
	if !ok {
		resp.Error = fmt.Errorf("the plan has no change to output %q", e.output)
		return
	}
	before, okBefore := change.Before.(map[string]any)
	after, okAfter := change.After.(map[string]any)
	if !okBefore || !okAfter {
		resp.Error = fmt.Errorf("output %q: before %T, after %T; want two maps", e.output, change.Before, change.After)
		return
	}
	var added, removed, changed []string
	for k, v := range after {
		old, ok := before[k]
		switch {
		case !ok:
			added = append(added, k)
		case !reflect.DeepEqual(old, v):
			changed = append(changed, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			removed = append(removed, k)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	if !slices.Equal(added, e.added) || !slices.Equal(removed, e.removed) || len(changed) > 0 {
		resp.Error = fmt.Errorf("output %q: added %v, removed %v, changed %v; want added %v, removed %v, nothing changed",
			e.output, added, removed, changed, e.added, e.removed)
	}
}
