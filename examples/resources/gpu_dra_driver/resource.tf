# NVIDIA's DRA driver on the GPU nodes labeled gpu-path=dra, and NVIDIA's
# device plugin on those labeled gpu-path=device-plugin: each GPU is handed
# out by one of them only. `terraform apply` returns once every DRA node
# has published its GPUs as ResourceSlices.
resource "gpu_dra_driver" "nvidia" {
  node_selector = { "gpu-path" = "dra" }

  # Pods that still ask for nvidia.com/gpu may take a whole GPU through DRA
  # too (Kubernetes 1.36 or newer).
  extended_resource_name = "nvidia.com/gpu"

  timeouts {
    create = "15m"
  }
}

resource "gpu_device_plugin" "nvidia" {
  node_selector = { "gpu-path" = "device-plugin" }
}

output "published_gpus" {
  value = gpu_dra_driver.nvidia.published_devices
}
