# A Proxmox VE VM with an NVIDIA GPU passed through, checked before it
# breaks, that installs the NVIDIA driver and container runtime itself on
# first boot (gpu-bootstrap from cloud-init).
#
#   1. gpu_passthrough_vm: a clone of a cloud-image template with the GPU
#      passed through by mapping (which an API token may do), q35 + PCIe,
#      OVMF with an EFI disk, ballooning off, started.
#   2. data "gpu_inventory" (source "proxmox"), read after it: the
#      cluster's NVIDIA GPUs, the PCI mapping that covers each and the VM
#      holding it (this one's now).
#
# Credentials come from the environment (PM_API_URL, PM_API_TOKEN_ID,
# PM_API_TOKEN_SECRET, PM_CA_CERT_FILE): see README.md. On the local
# testbed: eval "$(gpu-testbed env)" && terraform apply.

terraform {
  required_providers {
    gpu = {
      source = "gpuinfra/gpu"
    }
  }
}

variable "node" {
  description = "Proxmox node with the GPU."
  type        = string
  default     = "pve-a6000"
}

variable "template" {
  description = "Name or VM ID of a cloud-image template on that node (Ubuntu 24.04 with a cloud-init drive and an EFI disk)."
  type        = string
  default     = "ubuntu-2404-cloud"
}

variable "gpu_mapping" {
  description = "Cluster PCI resource mapping of the GPU (Datacenter → Resource Mappings); gpu_inventory's pci_devices[*].mapping lists them."
  type        = string
  default     = "a6000-0"
}

variable "user_data" {
  description = "Snippet volume holding ../bootstrap/proxmox-cloud-init/user-data.yaml, e.g. \"local:snippets/gpu-user-data.yaml\"; null for none."
  type        = string
  default     = null
}

variable "ssh_public_key" {
  description = "Public SSH key for the guest's user; null for none."
  type        = string
  default     = null
}

# The PM_* environment: no secret in the configuration.
provider "gpu" {}


resource "gpu_passthrough_vm" "gpu" {
  node = var.node
  name = "gpu-worker-1"

  clone {
    source = var.template
  }

  cores      = 8
  memory_mib = 32768 # all of it pinned while the VM runs: ballooning is off
  # machine = "q35" (PCIe) and bios = "ovmf" are the defaults.
  efi_disk {
    storage           = "local-lvm"
    pre_enrolled_keys = true # as the template's: a clone keeps its EFI disk
  }

  gpu {
    mapping = var.gpu_mapping
    # pcie = true, rombar = true and the whole device (audio function
    # included) are the defaults.
  }

  cloud_init {
    user           = "ubuntu"
    ssh_keys       = var.ssh_public_key == null ? null : [var.ssh_public_key]
    ip_config      = ["ip=dhcp"]
    user_data_file = var.user_data
  }

  tags          = ["gpu", "terraform"]
  allow_restart = true # a GPU change stops, changes and starts the VM

  timeouts {
    create = "15m"
  }
}

output "vm" {
  description = "The VM: node/vmid, status and its GPUs as Proxmox has them."
  value = {
    id     = gpu_passthrough_vm.gpu.id
    status = gpu_passthrough_vm.gpu.status
    gpus   = [for g in gpu_passthrough_vm.gpu.gpus : "${g.hostpci}: ${g.value} -> ${g.pci_address} ${g.product} (IOMMU group ${g.iommu_group})"]
    ipv4   = gpu_passthrough_vm.gpu.ipv4
  }
}

data "gpu_inventory" "cluster" {
  source     = "proxmox"
  depends_on = [gpu_passthrough_vm.gpu]
}

output "cluster_gpus" {
  description = "The cluster's NVIDIA GPUs: node, address, product, IOMMU group, mapping, vGPU types and the VM holding each."
  value = [for d in data.gpu_inventory.cluster.pci_devices :
    format("%s %s %s (IOMMU group %d) mapping=%s vgpu_types=%d %s", d.node, d.pci_address, d.product, d.iommu_group,
    coalesce(d.mapping, "-"), length(d.mdev_types), d.free ? "free" : "in VM ${d.vm_id}") if d.gpu
  ]
}
