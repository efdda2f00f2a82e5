variable "region" {
  type        = string
  description = "AWS region to build the AMI in."
  default     = "us-west-2"
}

variable "kubernetes_version" {
  type        = string
  description = "EKS Kubernetes minor version of the base AMI, such as 1.35."
  default     = "1.35"

  validation {
    condition     = can(regex("^1\\.[0-9]+$", var.kubernetes_version))
    error_message = "The kubernetes_version must be a minor version such as 1.35, without a patch number."
  }
}

variable "ami_variant" {
  type        = string
  description = "EKS-optimized AL2023 variant to start from: nvidia (driver and NVIDIA container toolkit preinstalled) or standard (gpu-bootstrap installs them)."
  default     = "nvidia"

  validation {
    condition     = contains(["nvidia", "standard"], var.ami_variant)
    error_message = "The ami_variant must be nvidia or standard."
  }
}

variable "ami_owners" {
  type        = list(string)
  description = "Owners of the EKS-optimized AMIs: 602401143452 in most commercial regions; [\"amazon\"] works everywhere."
  default     = ["602401143452"]
}

variable "instance_type" {
  type        = string
  description = "NVIDIA GPU instance type to build on: gpu-bootstrap check needs a GPU."
  default     = "g5.xlarge"

  # The x86_64 instance families that the EKS AL2023 NVIDIA AMI supports.
  validation {
    condition     = can(regex("^(g4dn|g5|g6|g6e|g6f|gr6|gr6f|g7e|p3|p3dn|p4d|p4de|p5|p5e|p5en|p6-b200|p6-b300)\\.", var.instance_type))
    error_message = "The instance_type must be an x86_64 NVIDIA GPU instance type, such as g4dn.xlarge or g5.xlarge."
  }
}

variable "bootstrap_binary" {
  type        = string
  description = "Path of the linux/amd64 gpu-bootstrap binary to install into the image."
}

variable "bootstrap_config" {
  type        = string
  description = "Path of the gpu-bootstrap YAML config; empty means gpu-bootstrap.yaml next to this template."
  default     = ""
}

variable "ami_name_prefix" {
  type        = string
  description = "Prefix of the name of the AMI this builds; the Kubernetes version and a UTC timestamp follow it."
  default     = "gpu-eks-node-al2023"
}
