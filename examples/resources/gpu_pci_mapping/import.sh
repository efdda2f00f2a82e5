# A mapping is imported by its ID; its devices come in as device blocks.
terraform import gpu_pci_mapping.l40s_pool l40s-pool
