# Share each GPU of an inference node group four ways by time-slicing. With
# rename_by_default the shares are advertised as nvidia.com/gpu.shared, so
# only pods that ask for a shared GPU get one (gpu_workload's
# `gpu { shared = true }`). Keep other device plugins off these nodes: two
# plugins on one node would hand out the same GPUs twice.
resource "gpu_device_plugin" "shared" {
  namespace     = "nvidia-shared"
  name          = "nvidia-device-plugin-shared"
  node_selector = { "eks.amazonaws.com/nodegroup" = "inference" }

  config {
    time_slicing {
      rename_by_default              = true
      fail_requests_greater_than_one = true

      resource {
        name     = "nvidia.com/gpu"
        replicas = 4
      }
    }
  }
}

output "shared_resource" {
  value = gpu_device_plugin.shared.resource_name # "nvidia.com/gpu.shared"
}
