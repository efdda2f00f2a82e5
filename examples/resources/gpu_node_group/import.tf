# Terraform 1.5 and later, and OpenTofu: an import block, by
# cluster_name:node_group_name.
import {
  to = gpu_node_group.h100
  id = "prod:h100"
}
