package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// nodeNames expects the `nodes` of a gpu_inventory to be exactly these, in order.
func nodeNames(address string, names ...string) statecheck.StateCheck {
	elems := make([]knownvalue.Check, len(names))
	for i, n := range names {
		elems[i] = knownvalue.ObjectPartial(map[string]knownvalue.Check{"name": knownvalue.StringExact(n)})
	}
	return statecheck.ExpectKnownValue(address, tfjsonpath.New("nodes"), knownvalue.ListExact(elems))
}

func nodeAt(address string, index int, attr string, value knownvalue.Check) statecheck.StateCheck {
	return statecheck.ExpectKnownValue(address, tfjsonpath.New("nodes").AtSliceIndex(index).AtMapKey(attr), value)
}

func TestAccInventoryDataSource_kubernetesAllocation(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "inventory-allocation")
	// Pods that hold GPUs: 3 of the H100 node's 8, the only GPU of one A10G node.
	holdGPUs(t, ns, "trainer", "gpu-p5-0", 3)
	holdGPUs(t, ns, "notebook", "gpu-g5-0", 1)
	// A finished job's pod holds nothing any more.
	runJobToCompletion(t, ns, "finished", "gpu-p4d-0", 2)

	const all = "data.gpu_inventory.all"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Read: every GPU node, sorted by name; the CPU node is not listed.
			{
				Config: providerConfig() + `
data "gpu_inventory" "all" {
  source = "kubernetes"
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					nodeNames(all, "gpu-g4dn-0", "gpu-g5-0", "gpu-g5-1", "gpu-p4d-0", "gpu-p5-0"),
					statecheck.ExpectKnownValue(all, tfjsonpath.New("totals"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"nodes":       knownvalue.Int64Exact(5),
						"gpus":        knownvalue.Int64Exact(19),
						"allocatable": knownvalue.Int64Exact(19),
						"allocated":   knownvalue.Int64Exact(4),
						"free":        knownvalue.Int64Exact(15),
					})),
					// gpu-p5-0: 8 H100s, 3 held by the trainer.
					nodeAt(all, 4, "product", knownvalue.StringExact("NVIDIA-H100-80GB-HBM3")),
					nodeAt(all, 4, "instance_type", knownvalue.StringExact("p5.48xlarge")),
					nodeAt(all, 4, "gpu_count", knownvalue.Int64Exact(8)),
					nodeAt(all, 4, "allocated", knownvalue.Int64Exact(3)),
					nodeAt(all, 4, "free", knownvalue.Int64Exact(5)),
					nodeAt(all, 4, "memory_mib", knownvalue.Int64Exact(81559)),
					nodeAt(all, 4, "compute_capability", knownvalue.StringExact("9.0")),
					nodeAt(all, 4, "ready", knownvalue.Bool(true)),
					nodeAt(all, 4, "schedulable", knownvalue.Bool(true)),
					// gpu-p4d-0: the completed job's pod no longer counts.
					nodeAt(all, 3, "allocated", knownvalue.Int64Exact(0)),
					nodeAt(all, 3, "free", knownvalue.Int64Exact(8)),
					// gpu-g5-0 is full, gpu-g5-1 is free.
					nodeAt(all, 1, "free", knownvalue.Int64Exact(0)),
					nodeAt(all, 2, "free", knownvalue.Int64Exact(1)),
				},
			},
		},
	})
}

func TestAccInventoryDataSource_kubernetesFilters(t *testing.T) {
	testAccPreCheck(t)
	ns := testNamespace(t, "inventory-filters")
	holdGPUs(t, ns, "trainer", "gpu-p5-0", 3)

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: providerConfig() + `
data "gpu_inventory" "h100" {
  source = "kubernetes"
  filter {
    product = "H100"
  }
}

data "gpu_inventory" "at_least_40gib" {
  source = "kubernetes"
  filter {
    min_gpu_memory_gib = 40
  }
}

data "gpu_inventory" "six_free" {
  source = "kubernetes"
  filter {
    min_free_gpus = 6
  }
}

data "gpu_inventory" "g5_by_label" {
  source = "kubernetes"
  filter {
    label_selector = "node.kubernetes.io/instance-type=g5.xlarge"
  }
}

data "gpu_inventory" "big_turing" {
  source = "kubernetes"
  filter {
    product            = "T4"
    min_gpu_memory_gib = 40
  }
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					nodeNames("data.gpu_inventory.h100", "gpu-p5-0"),
					// 40 GiB keeps the H100 (80 GB) and A100 (40 GB), drops the A10G (24 GB) and T4 (16 GB).
					nodeNames("data.gpu_inventory.at_least_40gib", "gpu-p4d-0", "gpu-p5-0"),
					// The H100 node has only 5 free while the trainer holds 3.
					nodeNames("data.gpu_inventory.six_free", "gpu-p4d-0"),
					nodeNames("data.gpu_inventory.g5_by_label", "gpu-g5-0", "gpu-g5-1"),
					nodeNames("data.gpu_inventory.big_turing"),
					statecheck.ExpectKnownValue("data.gpu_inventory.big_turing", tfjsonpath.New("totals").AtMapKey("nodes"), knownvalue.Int64Exact(0)),
				},
			},
		},
	})
}

func TestAccInventoryDataSource_invalidFilterFailsAtPlan(t *testing.T) {
	testAccPreCheck(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: providerConfig() + `
data "gpu_inventory" "bad" {
  source = "kubernetes"
  filter {
    product = "H100("
  }
}
`,
				ExpectError: regexp.MustCompile(`filter.product "H100\(" is not a regular expression`),
			},
			{
				Config: providerConfig() + `
data "gpu_inventory" "bad" {
  source = "kubernetes"
  filter {
    label_selector = "instance-type in g5"
  }
}
`,
				ExpectError: regexp.MustCompile(`filter.label_selector .* is not a label selector`),
			},
			{
				Config: providerConfig() + `
data "gpu_inventory" "bad" {
  source = "kubernetes"
  filter {
    min_free_gpus = -1
  }
}
`,
				ExpectError: regexp.MustCompile(`min_free_gpus`),
			},
			{
				Config: providerConfig() + `
data "gpu_inventory" "bad" {
  source = "slurm"
}
`,
				ExpectError: regexp.MustCompile(`(?s)source.*kubernetes`),
			},
		},
	})
}
