# Terraform 1.5 and later, and OpenTofu: an import block, applied with the
# next `terraform apply` (`terraform plan -generate-config-out=dra.tf`
# writes the resource block when there is none yet).
import {
  to = gpu_dra_driver.nvidia
  id = "nvidia-dra-driver-gpu/nvidia-dra-driver-gpu"
}
