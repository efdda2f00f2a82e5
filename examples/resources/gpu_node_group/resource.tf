# Two p5.48xlarge nodes (8 H100 each) in an existing EKS cluster. The apply
# returns once both nodes advertise their 8 GPUs, which needs the NVIDIA
# device plugin on them: gpu_device_plugin first (or a Bottlerocket NVIDIA
# AMI, whose OS runs it). Its pods must tolerate every taint of the group:
# setting tolerations replaces the plugin's defaults, so nvidia.com/gpu and
# CriticalAddonsOnly are listed again beside the group's dedicated=training.
# (A taint the plugin does not tolerate ends the wait within seconds, with
# a warning that names it; the group is kept, not replaced.)
resource "gpu_device_plugin" "nvidia" {
  node_selector = { "eks.amazonaws.com/nodegroup" = "h100" }
  tolerations = [
    { key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" },
    { key = "dedicated", operator = "Equal", value = "training", effect = "NoSchedule" },
    { key = "CriticalAddonsOnly", operator = "Exists" },
  ]
}

resource "gpu_node_group" "h100" {
  cluster_name    = "prod"
  node_group_name = "h100"
  node_role_arn   = "arn:aws:iam::111122223333:role/eks-gpu-nodes"
  subnet_ids      = ["subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002"]
  instance_types  = ["p5.48xlarge"]
  # ami_type defaults from the architecture: AL2023_x86_64_NVIDIA here.

  scaling {
    min_size     = 0
    max_size     = 4
    desired_size = 2
  }

  # Added to nvidia.com/gpu.present=true, which every GPU group gets.
  labels = { team = "ml" }
  # Added to nvidia.com/gpu=true:NO_SCHEDULE (gpu_taint = false drops it).
  taints = [{ key = "dedicated", value = "training", effect = "NO_SCHEDULE" }]

  wait_for = "gpus_allocatable"

  timeouts {
    create = "45m"
  }

  depends_on = [gpu_device_plugin.nvidia]
}

# With cluster-autoscaler, which changes desired_size: Terraform leaves it
# alone. The Auto Scaling group carries the node-template tags the
# autoscaler needs to scale the group up from zero.
resource "gpu_node_group" "autoscaled" {
  cluster_name           = "prod"
  node_group_name_prefix = "l4-"
  node_role_arn          = "arn:aws:iam::111122223333:role/eks-gpu-nodes"
  subnet_ids             = ["subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002"]
  instance_types         = ["g6.xlarge", "g6.2xlarge"]
  capacity_type          = "SPOT"
  wait_for               = "active"

  scaling {
    min_size     = 0
    max_size     = 20
    desired_size = 0
  }

  lifecycle {
    ignore_changes = [scaling[0].desired_size]
  }
}
