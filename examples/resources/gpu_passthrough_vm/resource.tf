# A VM with two RTX A6000s: one through a cluster PCI mapping (which an API
# token with Mapping.Use may pass), one by its raw address (which Proxmox lets
# only root@pam with a password pass: this needs a provider configured with
# proxmox { username = "root@pam", password = ... } or PM_USER/PM_PASS).
# Both are checked at plan time: the address is an NVIDIA GPU, its IOMMU
# group goes whole, no running VM holds it.
resource "gpu_passthrough_vm" "train" {
  node = "pve-a6000"
  name = "train-1"

  clone {
    source = "ubuntu-2404-cloud" # a template's name or VM ID
  }

  cores      = 16
  memory_mib = 65536 # pinned: ballooning is off with passthrough
  # machine = "q35" and bios = "ovmf" are the defaults; OVMF needs an EFI disk.
  efi_disk {
    storage           = "local-lvm"
    pre_enrolled_keys = true # as the template has it: a clone keeps its EFI disk
  }

  gpu {
    mapping     = "a6000-0"
    primary_gpu = true # x-vga: the guest's display
  }
  gpu {
    pci_address = "0000:02:00" # every function: the GPU and its audio device
  }

  cloud_init {
    user      = "ubuntu"
    ssh_keys  = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx0ZXJyYWZvcm0tcHJvdmlkZXItZ3B1LWV4YW1wbGU you@laptop"]
    ip_config = ["ip=dhcp"]
  }

  # A GPU change on the running VM stops it, changes it and starts it again;
  # without this, it is a plan error.
  allow_restart = true
}

# A vGPU instance of an L40S, by mapping.
resource "gpu_passthrough_vm" "inference" {
  node = "pve-l40s"
  name = "inference-1"

  clone {
    source = "ubuntu-2404-cloud"
  }
  efi_disk {
    storage           = "local-lvm"
    pre_enrolled_keys = true
  }

  gpu {
    mapping = "l40s-vgpu"
    mdev    = "nvidia-1155" # gpu_inventory lists the types with instances left
  }
}
