# Mapped GPUs with an API token, raw PCI addresses with root@pam's password:
# one provider block each. The resources that pass a raw address name the
# second with `provider = gpu.root`.
provider "gpu" {
  proxmox {
    endpoint         = "https://pve.example.com:8006/api2/json"
    api_token_id     = "terraform@pve!gpu"
    api_token_secret = var.proxmox_api_token_secret
  }
}

provider "gpu" {
  alias = "root"
  proxmox {
    endpoint = "https://pve.example.com:8006/api2/json"
    username = "root@pam"
    password = var.proxmox_root_password
  }
}

variable "proxmox_api_token_secret" {
  type      = string
  sensitive = true
}

variable "proxmox_root_password" {
  type      = string
  sensitive = true
}

resource "gpu_passthrough_vm" "by_mapping" {
  node = "pve-a6000"
  name = "train-1"
  clone {
    source = "ubuntu-2404-cloud"
  }
  efi_disk {
    storage           = "local-lvm"
    pre_enrolled_keys = true # as the template has it
  }
  gpu {
    mapping = "a6000-0"
  }
}

resource "gpu_passthrough_vm" "by_address" {
  provider = gpu.root

  node = "pve-a6000"
  name = "train-2"
  clone {
    source = "ubuntu-2404-cloud"
  }
  efi_disk {
    storage           = "local-lvm"
    pre_enrolled_keys = true
  }
  gpu {
    pci_address = "0000:02:00"
  }
}
