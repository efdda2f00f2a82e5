# Terraform 1.5 and later, and OpenTofu: an import block, by node/vmid.
import {
  to = gpu_passthrough_vm.train
  id = "pve-a6000/200"
}
