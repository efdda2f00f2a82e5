# Quickstart: read the GPU inventory of a Kubernetes cluster.
#
# `make demo` runs this against the local testbed (a real control plane with
# simulated GPU nodes). Against your own cluster, set KUBECONFIG or fill in the
# kubernetes block below, then `terraform init && terraform apply`.

terraform {
  required_providers {
    gpu = {
      source = "gpuinfra/gpu"
    }
  }
}

provider "gpu" {
  kubernetes {
    # config_path    = "~/.kube/config"
    # config_context = "my-cluster"
  }
}

# Every GPU node, with what it has and what is free.
data "gpu_inventory" "all" {
  source = "kubernetes"
}

# Nodes that can take a job needing one 40 GiB+ GPU right now.
data "gpu_inventory" "big_and_free" {
  source = "kubernetes"

  filter {
    min_gpu_memory_gib = 40
    min_free_gpus      = 1
  }
}

output "gpu_nodes" {
  description = "Each GPU node: product, then free of allocatable GPUs."
  value = {
    for n in data.gpu_inventory.all.nodes :
    n.name => format("%-24s %d/%d free", n.product, n.free, n.allocatable)
  }
}

output "totals" {
  value = data.gpu_inventory.all.totals
}

output "nodes_for_a_40gib_job" {
  value = [for n in data.gpu_inventory.big_and_free.nodes : n.name]
}
