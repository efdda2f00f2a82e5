# Terraform 1.5 and later, and OpenTofu: an import block, applied with the
# next `terraform apply` (`terraform plan -generate-config-out=plugin.tf`
# writes the resource block when there is none yet).
import {
  to = gpu_device_plugin.nvidia
  id = "nvidia-device-plugin/nvidia-device-plugin"
}
