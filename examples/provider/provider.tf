# Every block is optional: the provider contacts a backend only when a
# resource or data source that needs it is used, so a configuration with only
# Kubernetes resources needs no AWS or Proxmox credentials. Unset attributes
# fall back to the usual environment variables (KUBE_*, AWS_*, PM_*).
provider "gpu" {
  # gpu_device_plugin, gpu_workload, gpu_inventory (source = "kubernetes").
  kubernetes {
    config_path    = "~/.kube/config"
    config_context = "gpu-cluster"
  }

  # gpu_node_group. Credentials come from the AWS SDK's default chain
  # (environment, shared config, SSO, web identity, instance role).
  aws {
    region  = "us-east-1"
    profile = "gpu-admin"
  }

  # gpu_passthrough_vm, gpu_pci_mapping, gpu_inventory (source = "proxmox").
  # EITHER an API token OR a username and password: both in one block is a
  # plan error. A token passes GPUs by cluster PCI mapping (gpu { mapping }).
  proxmox {
    endpoint         = "https://pve.example.com:8006/api2/json"
    api_token_id     = "terraform@pve!gpu"
    api_token_secret = var.proxmox_api_token_secret
  }
}

variable "proxmox_api_token_secret" {
  description = "Secret of the Proxmox API token terraform@pve!gpu."
  type        = string
  sensitive   = true
}

# Proxmox VE lets only root@pam, logged in with its password, pass a raw PCI
# address (gpu { pci_address }) through; no API token can, not even
# root@pam's. Where some VMs need raw addresses, give root@pam its own
# provider block and set `provider = gpu.root` on those resources.
provider "gpu" {
  alias = "root"

  proxmox {
    endpoint = "https://pve.example.com:8006/api2/json"
    username = "root@pam"
    password = var.proxmox_root_password
  }
}

variable "proxmox_root_password" {
  description = "Password of root@pam, for raw PCI passthrough."
  type        = string
  sensitive   = true
}

# Alternatively, reach a cluster by its API server URL and a bearer token,
# for example an EKS cluster's endpoint, CA and token from aws_eks_cluster and
# aws_eks_cluster_auth.
provider "gpu" {
  alias = "eks"

  kubernetes {
    host                   = var.cluster_endpoint
    cluster_ca_certificate = var.cluster_ca_certificate
    token                  = var.cluster_token
  }
}

variable "cluster_endpoint" {
  description = "URL of the cluster's API server."
  type        = string
}

variable "cluster_ca_certificate" {
  description = "PEM-encoded CA certificate of the cluster's API server."
  type        = string
}

variable "cluster_token" {
  description = "Bearer token for the cluster's API server."
  type        = string
  sensitive   = true
}

# Or reach an EKS cluster with the AWS credentials alone: the endpoint and CA
# come from EKS, the token is minted in Go (no aws CLI, no kubeconfig), as an
# HCP Terraform run with dynamic AWS credentials needs.
provider "gpu" {
  alias = "eks_by_name"

  aws {
    region = "us-east-1"
  }

  kubernetes {
    eks {
      cluster_name = "prod"
    }
  }
}
