# GPU nodes in an EC2 Capacity Block for ML, from "which block" to "it ends
# tomorrow", with no launch template written by hand.
#
#   1. gpu_node_group: p5.48xlarge nodes in the block. The provider makes the
#      launch template EKS needs (the block's ID, MarketType capacity-block,
#      the block's instance type, no AMI so EKS picks it by ami_type), and
#      deletes it with the group. The plan refuses, before anything is
#      created, a block that is not there, of another type, in a zone none of
#      the subnets is in, too small for desired_size, or ended; and warns
#      while the block ends within expiry_warning, with the offerings to
#      extend it.
#   2. The outputs show when the block ends: EC2 reclaims its instances then.
#
# Buying the block stays with the AWS provider
# (aws_ec2_capacity_block_reservation); gpu_inventory with source = "ec2"
# lists the account's blocks and the offerings to buy.
#
# On the local testbed (`make testbed`, then `eval "$(gpu-testbed env)"`), a
# block is seeded with the emulator's test control (POST
# /_testbed/add-capacity-reservation on its EKS endpoint), then:
#   terraform apply -var cluster_name=$GPU_TESTBED_EKS_CLUSTER -var capacity_block_id=cr-...

terraform {
  required_providers {
    gpu = {
      source = "gpuinfra/gpu"
    }
  }
}

variable "cluster_name" {
  description = "Name of an existing EKS cluster."
  type        = string
}

variable "region" {
  description = "AWS region of the cluster; null for AWS_REGION or the profile's."
  type        = string
  default     = null
}

variable "capacity_block_id" {
  description = "ID of the Capacity Block for ML (cr-...), active or scheduled."
  type        = string
}

variable "subnet_ids" {
  description = "Subnets in the block's Availability Zone (EKS wants a block's group there only)."
  type        = list(string)
  default     = ["subnet-0a1b2c3d4e5f60002"]
}

variable "node_role_arn" {
  description = "IAM role of the nodes (AmazonEKSWorkerNodePolicy, AmazonEC2ContainerRegistryReadOnly, AmazonEKS_CNI_Policy)."
  type        = string
  default     = "arn:aws:iam::111122223333:role/eks-gpu-nodes"
}

provider "gpu" {
  aws {
    region = var.region
  }
  kubernetes {
    eks {
      cluster_name = var.cluster_name
      region       = var.region
    }
  }
}

resource "gpu_node_group" "block" {
  cluster_name    = var.cluster_name
  node_group_name = "h100-block"
  node_role_arn   = var.node_role_arn
  subnet_ids      = var.subnet_ids
  instance_types  = ["p5.48xlarge"]
  capacity_type   = "CAPACITY_BLOCK"

  capacity_reservation {
    id             = var.capacity_block_id
    expiry_warning = "48h"
  }

  scaling {
    min_size     = 0
    max_size     = 2
    desired_size = 2
  }

  timeouts {
    create = "45m"
  }
}

output "block_ends" {
  description = "When the block ends; EKS scales the group to zero 40 minutes before."
  value       = gpu_node_group.block.capacity_reservation[0].end
}

output "ready_nodes" {
  description = "Nodes of the group Ready after apply."
  value       = gpu_node_group.block.ready_nodes
}
