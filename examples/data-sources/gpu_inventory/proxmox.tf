# The free RTX A6000s of one Proxmox node, and a VM for the first one.
data "gpu_inventory" "free_a6000" {
  source = "proxmox"

  filter {
    nodes   = ["pve-a6000"]
    product = "A6000" # RE2 on the PCI device name
  }
}

locals {
  # GPU functions only (a GPU's audio function is listed with gpu = false).
  # Free (no running VM has it), or already this VM's: once applied, the
  # VM keeps its GPU instead of moving to the next free one at every plan.
  free_gpus = [for d in data.gpu_inventory.free_a6000.pci_devices : d if d.gpu && (d.free || d.vm_name == "train-2")]
}

output "free_gpus" {
  description = "Node, address, IOMMU group and the mapping (if any) of each free A6000."
  value = [for d in local.free_gpus :
    { node = d.node, device = d.device, iommu_group = d.iommu_group, mapping = d.mapping }
  ]
}

resource "gpu_passthrough_vm" "on_a_free_gpu" {
  node = local.free_gpus[0].node
  name = "train-2"

  clone {
    source = "ubuntu-2404-cloud"
  }
  efi_disk {
    storage           = "local-lvm"
    pre_enrolled_keys = true
  }

  gpu {
    # A mapping where one covers the GPU (API tokens may pass it), else the device's address (root@pam only).
    mapping     = local.free_gpus[0].mapping
    pci_address = local.free_gpus[0].mapping == null ? local.free_gpus[0].device : null
  }
}
