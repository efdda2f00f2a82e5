# Nodes with at least one free H100 or A100 of 40 GiB or more.
data "gpu_inventory" "big_gpus" {
  source = "kubernetes"

  filter {
    product            = "H100|A100"
    min_gpu_memory_gib = 40
    min_free_gpus      = 1
  }
}

output "nodes_with_free_gpus" {
  description = "Names of the nodes that have a free H100 or A100."
  value       = [for node in data.gpu_inventory.big_gpus.nodes : node.name if node.free > 0]
}

output "free_gpus" {
  description = "Free GPUs on those nodes, in total."
  value       = data.gpu_inventory.big_gpus.totals.free
}
