package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// nodeNames expects the `nodes` of a gpu_inventory to be exactly these,
// each under its own name.
func nodeNames(address string, names ...string) statecheck.StateCheck {
	elems := make(map[string]knownvalue.Check, len(names))
	for _, n := range names {
		elems[n] = knownvalue.ObjectPartial(map[string]knownvalue.Check{"name": knownvalue.StringExact(n)})
	}
	return statecheck.ExpectKnownValue(address, tfjsonpath.New("nodes"), knownvalue.MapExact(elems))
}

func nodeAt(address, node, attr string, value knownvalue.Check) statecheck.StateCheck {
	return statecheck.ExpectKnownValue(address, tfjsonpath.New("nodes").AtMapKey(node).AtMapKey(attr), value)
}

// sums is a `totals` or `by_product` entry of device-plugin nodes only:
// no DRA devices, no MIG devices.
func sums(nodes, gpus, allocatable, allocated, free int64) knownvalue.Check {
	zero := knownvalue.Int64Exact(0)
	return knownvalue.ObjectExact(map[string]knownvalue.Check{
		"nodes":               knownvalue.Int64Exact(nodes),
		"gpus":                knownvalue.Int64Exact(gpus),
		"allocatable":         knownvalue.Int64Exact(allocatable),
		"allocated":           knownvalue.Int64Exact(allocated),
		"free":                knownvalue.Int64Exact(free),
		"device_plugin_nodes": knownvalue.Int64Exact(nodes),
		"dra_nodes":           zero,
		"both_paths_nodes":    zero,
		"dra_devices":         knownvalue.ObjectExact(map[string]knownvalue.Check{"published": zero, "allocated": zero, "unhealthy": zero, "free": zero}),
		"mig_devices":         knownvalue.MapExact(map[string]knownvalue.Check{}),
	})
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
			// Read: every GPU node, keyed by name; the CPU node is not listed.
			{
				Config: providerConfig() + `
data "gpu_inventory" "all" {
  source = "kubernetes"
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					nodeNames(all, "gpu-g4dn-0", "gpu-g5-0", "gpu-g5-1", "gpu-p4d-0", "gpu-p5-0"),
					statecheck.ExpectKnownValue(all, tfjsonpath.New("totals"), sums(5, 19, 19, 4, 15)),
					// The same sums per GPU product.
					statecheck.ExpectKnownValue(all, tfjsonpath.New("by_product"), knownvalue.MapExact(map[string]knownvalue.Check{
						"NVIDIA-H100-80GB-HBM3": sums(1, 8, 8, 3, 5),
						"NVIDIA-A100-SXM4-40GB": sums(1, 8, 8, 0, 8),
						"NVIDIA-A10G":           sums(2, 2, 2, 1, 1),
						"Tesla-T4":              sums(1, 1, 1, 0, 1),
					})),
					// gpu-p5-0: 8 H100s, 3 held by the trainer.
					nodeAt(all, "gpu-p5-0", "product", knownvalue.StringExact("NVIDIA-H100-80GB-HBM3")),
					nodeAt(all, "gpu-p5-0", "instance_type", knownvalue.StringExact("p5.48xlarge")),
					nodeAt(all, "gpu-p5-0", "gpu_count", knownvalue.Int64Exact(8)),
					nodeAt(all, "gpu-p5-0", "allocated", knownvalue.Int64Exact(3)),
					nodeAt(all, "gpu-p5-0", "free", knownvalue.Int64Exact(5)),
					nodeAt(all, "gpu-p5-0", "memory_mib", knownvalue.Int64Exact(81559)),
					nodeAt(all, "gpu-p5-0", "compute_capability", knownvalue.StringExact("9.0")),
					nodeAt(all, "gpu-p5-0", "ready", knownvalue.Bool(true)),
					nodeAt(all, "gpu-p5-0", "schedulable", knownvalue.Bool(true)),
					// Labels are opt-in: none without include_labels.
					nodeAt(all, "gpu-p5-0", "labels", knownvalue.Null()),
					// gpu-p4d-0: the completed job's pod no longer counts.
					nodeAt(all, "gpu-p4d-0", "allocated", knownvalue.Int64Exact(0)),
					nodeAt(all, "gpu-p4d-0", "free", knownvalue.Int64Exact(8)),
					// gpu-g5-0 is full, gpu-g5-1 is free.
					nodeAt(all, "gpu-g5-0", "free", knownvalue.Int64Exact(0)),
					nodeAt(all, "gpu-g5-1", "free", knownvalue.Int64Exact(1)),
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
					statecheck.ExpectKnownValue("data.gpu_inventory.big_turing", tfjsonpath.New("by_product"), knownvalue.MapExact(map[string]knownvalue.Check{})),
					// by_product counts the filtered nodes only. (The previous
					// test's pods may still be terminating, holding GPUs: only
					// capacity is asserted here.)
					statecheck.ExpectKnownValue("data.gpu_inventory.h100", tfjsonpath.New("by_product"), knownvalue.MapExact(map[string]knownvalue.Check{
						"NVIDIA-H100-80GB-HBM3": capacity(1, 8),
					})),
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
  source         = "kubernetes"
  include_labels = ["nvidia.com/gpu.product", "nvidia.com/gpu product"]
}
`,
				ExpectError: regexp.MustCompile(`include_labels\[1\] "nvidia.com/gpu product" is not a label key`),
			},
			{
				Config: providerConfig() + `
data "gpu_inventory" "bad" {
  source         = "ec2"
  include_labels = ["pool"]
}
`,
				ExpectError: regexp.MustCompile(`include_labels shapes the nodes of source = "kubernetes" only`),
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
