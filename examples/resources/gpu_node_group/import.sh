# A node group is imported by cluster_name:node_group_name.
terraform import gpu_node_group.h100 prod:h100
