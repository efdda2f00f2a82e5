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

variable "architecture" {
  type        = string
  description = "Architecture of the AMI: x86_64, or arm64 for Graviton GPU instances (g5g)."
  default     = "x86_64"

  validation {
    condition     = contains(["x86_64", "arm64"], var.architecture)
    error_message = "The architecture must be x86_64 or arm64 (EC2's names, as in the EKS AMI names)."
  }
}

variable "instance_type" {
  type        = string
  description = "NVIDIA GPU instance type to build on (gpu-bootstrap check needs a GPU); empty means g5.xlarge for x86_64 and g5g.xlarge for arm64. It must match architecture."
  default     = ""

  # The instance families that the EKS AL2023 NVIDIA AMIs support: x86_64,
  # and g5g (Graviton2 with NVIDIA T4G) for arm64.
  validation {
    condition     = var.instance_type == "" || can(regex("^(g4dn|g5|g6|g6e|g6f|gr6|gr6f|g7e|p3|p3dn|p4d|p4de|p5|p5e|p5en|p6-b200|p6-b300|g5g)\\.", var.instance_type))
    error_message = "The instance_type must be an NVIDIA GPU instance type, such as g5.xlarge (x86_64) or g5g.xlarge (arm64)."
  }
}

variable "gpu_bootstrap_version" {
  type        = string
  description = "gpu-bootstrap release to install, such as 0.1.0: its linux tar.gz for the AMI's architecture is downloaded from the GitHub release and checked against the release's SHA256SUMS."
  default     = "0.1.0"

  validation {
    condition     = can(regex("^[0-9]+\\.[0-9]+\\.[0-9]+(-[0-9A-Za-z.-]+)?$", var.gpu_bootstrap_version))
    error_message = "The gpu_bootstrap_version must be a release version such as 0.1.0, without the leading v."
  }
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
