# A VM is imported by node/vmid.
terraform import gpu_passthrough_vm.train pve-a6000/200
