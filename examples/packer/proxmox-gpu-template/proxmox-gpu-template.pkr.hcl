# NOT validated in CI: the Proxmox Packer plugin cannot be obtained in this
# build environment (CI checks only formatting and HCL syntax). Run
# `packer init .` and `packer validate` yourself.
#
# Builds a Proxmox VE template for VMs with a passed-through NVIDIA GPU:
# clones a cloud-init Ubuntu template, passes the GPU through for the build,
# installs the released gpu-bootstrap for the VM's architecture (downloaded
# and checked against the release's SHA256SUMS) with its config, and runs
# plan, apply and check.
#
#   packer init .
#   packer build -var gpu_bootstrap_version=0.1.0 .

packer {
  required_plugins {
    proxmox = {
      version = ">= 1.2.0"
      source  = "github.com/hashicorp/proxmox"
    }
  }
}

# Empty url, username and token fall back to PROXMOX_URL, PROXMOX_USERNAME
# and PROXMOX_TOKEN.
variable "proxmox_url" {
  type        = string
  description = "Proxmox API URL, such as https://pve.example.com:8006/api2/json."
  default     = ""
}

variable "proxmox_username" {
  type        = string
  description = "API token ID, user@realm!tokenid."
  default     = ""
}

variable "proxmox_token" {
  type        = string
  description = "API token secret."
  default     = ""
  sensitive   = true
}

variable "node" {
  type        = string
  description = "Proxmox node that has the GPU."
}

variable "clone_vm" {
  type        = string
  description = "Name of the cloud-init template to clone: q35, OVMF, qemu-guest-agent installed."
  default     = "ubuntu-2404-cloudinit"
}

variable "gpu_mapping" {
  type        = string
  description = "Cluster PCI resource mapping of the GPU (Datacenter > Resource Mappings). A token cannot set raw host PCI addresses; only root@pam can."
  default     = "gpu0"
}

variable "storage_pool" {
  type        = string
  description = "Storage pool for the EFI disk."
  default     = "local-lvm"
}

variable "gpu_bootstrap_version" {
  type        = string
  description = "gpu-bootstrap release to install, such as 0.1.0: the build VM downloads its linux tar.gz for its own architecture (uname -m) from the GitHub release and checks it against the release's SHA256SUMS."
  default     = "0.1.0"

  validation {
    condition     = can(regex("^[0-9]+\\.[0-9]+\\.[0-9]+(-[0-9A-Za-z.-]+)?$", var.gpu_bootstrap_version))
    error_message = "The gpu_bootstrap_version must be a release version such as 0.1.0, without the leading v."
  }
}

locals {
  node_binary = "/usr/local/bin/gpu-bootstrap"
  node_config = "/etc/gpu-bootstrap/config.yaml"
}

source "proxmox-clone" "gpu" {
  proxmox_url = var.proxmox_url
  username    = var.proxmox_username
  token       = var.proxmox_token
  node        = var.node

  clone_vm   = var.clone_vm
  full_clone = true

  vm_name              = "gpu-template-build"
  template_name        = "gpu-node-${formatdate("YYYYMMDD", timestamp())}"
  template_description = "GPU node configured by gpu-bootstrap"

  cores    = 4
  cpu_type = "host"
  memory   = 16384

  # PCIe passthrough needs the q35 machine; OVMF needs an EFI disk.
  machine = "q35"
  bios    = "ovmf"
  efi_config {
    efi_storage_pool  = var.storage_pool
    efi_type          = "4m"
    pre_enrolled_keys = false
  }

  pci_devices {
    mapping = var.gpu_mapping
    pcie    = true
  }

  ipconfig {
    ip = "dhcp"
  }

  ssh_username = "ubuntu"
}

build {
  sources = ["source.proxmox-clone.gpu"]

  provisioner "file" {
    source      = "${path.root}/gpu-bootstrap.yaml"
    destination = "/tmp/gpu-bootstrap.yaml"
  }

  provisioner "shell" {
    inline = [
      "cloud-init status --wait",
      "sudo apt-get update",
      "sudo DEBIAN_FRONTEND=noninteractive apt-get install -y containerd curl",
      "sudo install -D -m 0644 /tmp/gpu-bootstrap.yaml ${local.node_config}",
    ]
  }

  # Downloads gpu-bootstrap_<version>_linux_<arch>.tar.gz (arch from the VM's
  # uname -m) from the GitHub release, checks it against the release's
  # SHA256SUMS, installs the binary.
  provisioner "shell" {
    script          = "${path.root}/../../bootstrap/install-gpu-bootstrap.sh"
    execute_command = "chmod +x {{ .Path }}; sudo env {{ .Vars }} {{ .Path }}"
    environment_vars = [
      "GPU_BOOTSTRAP_VERSION=${var.gpu_bootstrap_version}",
      "GPU_BOOTSTRAP_BIN=${local.node_binary}",
    ]
  }

  # plan exits 2 when it has changes to make.
  provisioner "shell" {
    inline           = ["sudo ${local.node_binary} plan --config ${local.node_config}"]
    valid_exit_codes = [0, 2]
  }

  provisioner "shell" {
    inline = ["sudo ${local.node_binary} apply --config ${local.node_config}"]
  }

  provisioner "shell" {
    inline            = ["sudo systemctl reboot"]
    expect_disconnect = true
  }

  provisioner "shell" {
    pause_before = "30s"
    inline = [
      "sudo ${local.node_binary} check --config ${local.node_config}",
      # Clones run cloud-init again and get a machine-id of their own.
      "sudo cloud-init clean --logs",
      "sudo truncate -s 0 /etc/machine-id",
    ]
  }
}
