# Nodes with at least one free H100 or A100 of 40 GiB or more.
data "gpu_inventory" "big_gpus" {
  source = "kubernetes"

  filter {
    product            = "H100|A100"
    min_gpu_memory_gib = 40
    min_free_gpus      = 1
  }

  # Labels are opt-in: keep only the ones used below (a key, or a prefix ending in "*").
  include_labels = ["topology.kubernetes.io/zone"]
}

output "nodes_with_free_gpus" {
  description = "Names of the nodes that have a free H100 or A100, with their zone."
  value       = { for name, node in data.gpu_inventory.big_gpus.nodes : name => lookup(node.labels, "topology.kubernetes.io/zone", "") }
}

output "free_gpus" {
  description = "Free GPUs on those nodes, in total."
  value       = data.gpu_inventory.big_gpus.totals.free
}

# A large fleet's GPU counts per product, without carrying every node.
data "gpu_inventory" "fleet" {
  source        = "kubernetes"
  include_nodes = false
}

output "free_h100s" {
  description = "Free H100 GPUs in the whole cluster."
  value       = try(data.gpu_inventory.fleet.by_product["NVIDIA-H100-80GB-HBM3"].free, 0)
}

# GPUs handed out through Dynamic Resource Allocation (NVIDIA's DRA driver) are
# counted beside the device plugin's: each node says which path it uses, and
# its GPUs are counted once.
output "gpu_paths" {
  description = "Nodes per way of offering GPUs (device plugin, DRA, both)."
  value = {
    device_plugin = data.gpu_inventory.fleet.totals.device_plugin_nodes
    dra           = data.gpu_inventory.fleet.totals.dra_nodes
    both          = data.gpu_inventory.fleet.totals.both_paths_nodes
  }
}

output "free_mig_devices" {
  description = "Free DRA MIG devices per profile, e.g. { \"1g.10gb\" = 12 }; empty when DRA is not served."
  value       = { for profile, c in data.gpu_inventory.fleet.totals.mig_devices : profile => c.free }
}
