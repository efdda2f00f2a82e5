# GPU capacity on EKS that is ready when Terraform says so, with no aws CLI
# and no kubeconfig: what a Terraform Cloud run can do.
#
#   1. gpu_device_plugin: NVIDIA's device plugin, on the GPU nodes to come.
#   2. gpu_node_group: p5.48xlarge nodes; apply returns when each advertises
#      its 8 GPUs (wait_for = "gpus_allocatable").
#   3. gpu_workload: a job that takes all of them and runs to completion.
#
# Both the node group and the Kubernetes resources reach the cluster through
# EKS: DescribeCluster for the endpoint and CA, and an EKS token minted from
# the AWS credentials (as `aws eks get-token` does).
#
# On the local testbed (`make testbed`, then `eval "$(gpu-testbed env)"`):
#   terraform apply -var cluster_name=$GPU_TESTBED_EKS_CLUSTER
# The testbed's EKS emulator offers the subnets and role used by default
# below. Against your account, set the variables to your cluster's.

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

variable "subnet_ids" {
  description = "Subnets of the GPU nodes, in zones that offer the instance type."
  type        = list(string)
  default     = ["subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002", "subnet-0a1b2c3d4e5f60003"]
}

variable "node_role_arn" {
  description = "IAM role of the nodes (AmazonEKSWorkerNodePolicy, AmazonEC2ContainerRegistryReadOnly, AmazonEKS_CNI_Policy)."
  type        = string
  default     = "arn:aws:iam::111122223333:role/eks-gpu-nodes"
}

variable "instance_type" {
  description = "An instance type with NVIDIA GPUs; checked at plan time."
  type        = string
  default     = "p5.48xlarge"
}

# Credentials come from the AWS SDK's chain: AWS_* variables, ~/.aws, SSO,
# web identity (Terraform Cloud's dynamic credentials), an instance role.
provider "gpu" {
  aws {
    region = var.region
  }

  # Every Kubernetes resource below reaches the cluster with an EKS token:
  # no kubeconfig, no exec plugin.
  kubernetes {
    eks {
      cluster_name = var.cluster_name
      region       = var.region
    }
  }
}

# 1. The device plugin, only on the GPU group's nodes. It tolerates the
#    nvidia.com/gpu taint the group puts on them.
resource "gpu_device_plugin" "nvidia" {
  node_selector = { "eks.amazonaws.com/nodegroup" = "h100" }
}

# 2. Two p5.48xlarge nodes (8 H100 each). The plan fails, before anything is
#    created, if the type has no NVIDIA GPU or is not offered in the subnets'
#    zones. The Auto Scaling group gets cluster-autoscaler's node-template
#    tags, so the group can also scale from zero.
resource "gpu_node_group" "h100" {
  cluster_name    = var.cluster_name
  node_group_name = "h100"
  node_role_arn   = var.node_role_arn
  subnet_ids      = var.subnet_ids
  instance_types  = [var.instance_type]
  labels          = { workload = "training" }

  scaling {
    min_size     = 0
    max_size     = 4
    desired_size = 2
  }

  wait_for = "gpus_allocatable"

  timeouts {
    create = "45m"
  }

  # The nodes advertise their GPUs only once the plugin runs on them.
  depends_on = [gpu_device_plugin.nvidia]
}

# 3. Two pods of 8 GPUs each on the group's nodes; apply returns when the
#    job has completed.
resource "gpu_workload" "train" {
  kind = "job"

  metadata {
    name = "train-h100"
  }
  container {
    image   = "nvcr.io/nvidia/pytorch:24.05-py3"
    command = ["python", "-c", "import torch; print(torch.cuda.device_count())"]
  }
  node_selector = { "eks.amazonaws.com/nodegroup" = gpu_node_group.h100.node_group_name }
  gpu {
    count = gpu_node_group.h100.gpus_per_node
  }
  job {
    completions = gpu_node_group.h100.scaling[0].desired_size
    parallelism = gpu_node_group.h100.scaling[0].desired_size
  }
}

output "allocatable_gpus" {
  description = "nvidia.com/gpu allocatable on the group's nodes after apply."
  value       = gpu_node_group.h100.allocatable_gpus
}

output "gpu" {
  description = "The instance type's GPU, as EC2 describes it."
  value       = "${gpu_node_group.h100.gpus_per_node} x ${gpu_node_group.h100.gpu_product} (${gpu_node_group.h100.gpu_memory_mib} MiB each)"
}
