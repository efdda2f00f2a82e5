# Quickstart: make a cluster's GPUs allocatable, run GPU work on the right
# nodes, and read what is left.
#
# `make demo` runs this against the local testbed (a real control plane with
# simulated GPU nodes that advertise no GPUs until the device plugin runs).
# Against your own cluster, set KUBECONFIG or fill in the kubernetes block
# below, then `terraform init && terraform apply`.

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

# NVIDIA's device plugin on every GPU node, and GPU Feature Discovery, which
# labels each node with its GPUs' product and memory (what `products` and
# `min_memory_gib` below select on). GFD's labels reach the nodes through Node
# Feature Discovery, deployed with it as NVIDIA's Helm chart does; NFD also
# labels fresh GPU nodes as such, which the plugin's pods wait for. Apply
# returns once every GPU node advertises allocatable nvidia.com/gpu and
# carries GFD's labels.
resource "gpu_device_plugin" "nvidia" {
  gpu_feature_discovery {}
}

# A training job on two GPUs with at least 40 GiB each (H100 or A100 here);
# apply returns when it has completed, or explains why it cannot run.
resource "gpu_workload" "train" {
  kind = "job"

  metadata {
    name = "quickstart-train"
  }
  container {
    image   = "nvcr.io/nvidia/pytorch:24.05-py3"
    command = ["python", "-c", "import torch; print(torch.cuda.device_count())"]
  }
  gpu {
    count          = 2
    min_memory_gib = 40
  }

  depends_on = [gpu_device_plugin.nvidia]
}

# An inference service that keeps one A10G per replica busy.
resource "gpu_workload" "serve" {
  kind = "deployment"

  metadata {
    name = "quickstart-serve"
  }
  container {
    image = "nvcr.io/nvidia/tritonserver:24.05-py3"
  }
  gpu {
    count    = 1
    products = ["NVIDIA-A10G"]
  }
  deployment {
    replicas = 2
  }

  depends_on = [gpu_device_plugin.nvidia]
}

# Every GPU node, with what it has and what is free, read after the work above.
data "gpu_inventory" "all" {
  source     = "kubernetes"
  depends_on = [gpu_workload.train, gpu_workload.serve]
}

# Nodes that can take another job needing one 40 GiB+ GPU right now.
data "gpu_inventory" "big_and_free" {
  source = "kubernetes"

  filter {
    min_gpu_memory_gib = 40
    min_free_gpus      = 1
  }

  depends_on = [gpu_workload.train, gpu_workload.serve]
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

output "training_job" {
  value = "${gpu_workload.train.status} on ${join(", ", gpu_workload.train.node_names)}"
}

output "serving_on" {
  value = gpu_workload.serve.node_names
}

output "nodes_for_a_40gib_job" {
  value = [for n in data.gpu_inventory.big_and_free.nodes : n.name]
}
