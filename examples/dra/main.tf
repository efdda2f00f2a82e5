# GPUs through Dynamic Resource Allocation (Kubernetes 1.34 or newer):
# NVIDIA's DRA driver on the nodes meant for it, a service that asks for GPUs
# with alternatives in order, and the inventory counting DRA devices.
#
# `make demo` runs this against the local testbed, whose dra-* nodes are
# labeled testbed.gpuinfra.io/dra=true. On your own cluster, label the nodes
# you hand to DRA and set dra_node_selector; keep gpu_device_plugin off those
# nodes (its node_selector), or both would hand out the same GPUs.

terraform {
  required_providers {
    gpu = {
      source = "gpuinfra/gpu"
    }
  }
}

provider "gpu" {
  kubernetes {}
}

variable "dra_node_selector" {
  description = "Labels of the nodes whose GPUs NVIDIA's DRA driver hands out."
  type        = map(string)
  default     = { "testbed.gpuinfra.io/dra" = "true" }
}

# The driver's kubelet plugin on exactly those nodes (the selector is enough:
# no Node Feature Discovery label needed); apply returns once each has
# published its GPUs or MIG devices as ResourceSlices.
resource "gpu_dra_driver" "nvidia" {
  node_selector     = var.dra_node_selector
  gpu_node_affinity = false
}

# An inference service whose pod takes one B200 if some node has a free one,
# else two A100s with at least 40 GiB each: the scheduler takes the first
# alternative a node can satisfy. Its pod keeps its claim while it runs, so
# the inventory below counts the two GPUs as allocated.
resource "gpu_workload" "serve" {
  kind = "deployment"

  metadata {
    name = "dra-serve"
  }
  container {
    image = "nvcr.io/nvidia/tritonserver:24.05-py3"
  }
  gpu {
    allocation = "dra"
    count      = 1
    products   = ["NVIDIA-B200"]

    alternative {
      count          = 2
      products       = ["NVIDIA-A100-SXM4-40GB"]
      min_memory_gib = 40
    }
  }

  depends_on = [gpu_dra_driver.nvidia]
}

data "gpu_inventory" "all" {
  source     = "kubernetes"
  depends_on = [gpu_workload.serve]
}

output "serving_on" {
  value = gpu_workload.serve.node_names
}

output "dra_devices" {
  description = "Devices published through DRA, allocated and free, and MIG devices by profile."
  value = {
    all = data.gpu_inventory.all.totals.dra_devices
    mig = data.gpu_inventory.all.totals.mig_devices
  }
}

output "dra_nodes" {
  value = {
    for n in data.gpu_inventory.all.nodes : n.name => "${n.dra_devices.allocated}/${n.dra_devices.published} allocated"
    if n.dra_devices.published > 0
  }
}
