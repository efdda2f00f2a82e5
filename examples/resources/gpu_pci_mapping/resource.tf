# Every L40S of node pve-l40s-b (it has two) as one mapping: a GPU pool. A
# VM with gpu { mapping = "l40s-pool" } gets the first L40S on its node that
# no running VM holds. Without select.nodes the mapping takes the L40S of
# every node. The devices are resolved at plan time from the nodes' hardware
# (gpu_inventory with source = "proxmox" lists the same), and again at every
# plan: a card pulled or moved shows as a change.
resource "gpu_pci_mapping" "l40s_pool" {
  name        = "l40s-pool"
  description = "Every L40S of pve-l40s-b"
  # mdev follows the cards: true here, as the L40S offers vGPU types (PVE
  # wants the flag to match the hardware). A VM without gpu.mdev still gets a
  # whole card.

  select {
    product = "L40S"         # a part of the product name, or /regex/
    nodes   = ["pve-l40s-b"] # unset: every node of the cluster
  }
}

# The same devices, listed one by one (as an import writes them):
#
# resource "gpu_pci_mapping" "l40s_pool" {
#   name = "l40s-pool"
#   device {
#     node    = "pve-l40s-b"
#     address = "0000:41:00" # the whole device: the GPU and its other functions
#   }
#   device {
#     node    = "pve-l40s-b"
#     address = "0000:61:00"
#   }
# }

output "l40s_pool_devices" {
  value = [for e in gpu_pci_mapping.l40s_pool.entries : "${e.node} ${e.path} ${e.product}"]
}
