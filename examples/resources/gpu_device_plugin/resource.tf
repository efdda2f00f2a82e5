# NVIDIA's device plugin on every GPU node, with GPU Feature Discovery (the
# labels gpu_workload selects on) and the DCGM exporter for Prometheus.
# `terraform apply` returns once every GPU node advertises nvidia.com/gpu.
resource "gpu_device_plugin" "nvidia" {
  namespace = "nvidia-device-plugin"

  gpu_feature_discovery {}

  dcgm_exporter {
    service_monitor = true # only if the Prometheus Operator's CRD is installed
  }

  timeouts {
    create = "15m"
  }
}

output "allocatable_gpus" {
  value = gpu_device_plugin.nvidia.allocatable_gpus
}
