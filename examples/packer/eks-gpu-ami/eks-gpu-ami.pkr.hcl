# Builds an EKS node AMI for NVIDIA GPU instances: starts from the latest
# EKS-optimized Amazon Linux 2023 AMI, installs gpu-bootstrap with its config,
# and runs plan, apply and check on a real GPU instance.
#
#   packer build -var bootstrap_binary=/path/to/gpu-bootstrap .
#
# Packer v1.9 bundles the amazon plugin. Newer Packer needs
# `packer plugins install github.com/hashicorp/amazon` first (see README.md).

locals {
  build_time       = formatdate("YYYYMMDDhhmmss", timestamp())
  bootstrap_config = var.bootstrap_config != "" ? var.bootstrap_config : "${path.root}/gpu-bootstrap.yaml"
  # Where the build puts gpu-bootstrap and its config on the image.
  node_binary = "/usr/local/bin/gpu-bootstrap"
  node_config = "/etc/gpu-bootstrap/config.yaml"
}

source "amazon-ebs" "eks_gpu" {
  region          = var.region
  instance_type   = var.instance_type
  ami_name        = "${var.ami_name_prefix}-${var.kubernetes_version}-${local.build_time}"
  ami_description = "EKS ${var.kubernetes_version} AL2023 x86_64 GPU node (${var.ami_variant} base) configured by gpu-bootstrap"

  # EKS names its AMIs amazon-eks-node-al2023-<arch>-<variant>-<k8s minor>-v<date>.
  source_ami_filter {
    owners      = var.ami_owners
    most_recent = true
    filters = {
      name                = "amazon-eks-node-al2023-x86_64-${var.ami_variant}-${var.kubernetes_version}-v*"
      architecture        = "x86_64"
      root-device-type    = "ebs"
      virtualization-type = "hvm"
    }
  }

  ssh_username = "ec2-user"

  # The build instance answers IMDSv2 only.
  metadata_options {
    http_endpoint = "enabled"
    http_tokens   = "required"
  }

  tags = {
    Name              = "${var.ami_name_prefix}-${var.kubernetes_version}"
    KubernetesVersion = var.kubernetes_version
    BaseAMIVariant    = var.ami_variant
    SourceAMIName     = "{{ .SourceAMIName }}"
    ConfiguredBy      = "gpu-bootstrap"
  }
}

build {
  sources = ["source.amazon-ebs.eks_gpu"]

  provisioner "file" {
    source      = var.bootstrap_binary
    destination = "/tmp/gpu-bootstrap"
  }

  provisioner "file" {
    source      = local.bootstrap_config
    destination = "/tmp/gpu-bootstrap.yaml"
  }

  provisioner "shell" {
    inline = [
      "sudo install -D -m 0755 /tmp/gpu-bootstrap ${local.node_binary}",
      "sudo install -D -m 0644 /tmp/gpu-bootstrap.yaml ${local.node_config}",
      "rm -f /tmp/gpu-bootstrap /tmp/gpu-bootstrap.yaml",
      "${local.node_binary} version",
    ]
  }

  # plan exits 2 when it has changes to make, which is expected on a base AMI.
  provisioner "shell" {
    inline           = ["sudo ${local.node_binary} plan --config ${local.node_config}"]
    valid_exit_codes = [0, 2]
  }

  provisioner "shell" {
    inline = ["sudo ${local.node_binary} apply --config ${local.node_config}"]
  }

  # A driver that apply installed or changed is loaded on the next boot.
  provisioner "shell" {
    inline            = ["sudo systemctl reboot"]
    expect_disconnect = true
  }

  # check exits 1 when the node is unhealthy, which fails the build.
  # A second plan must find nothing to do (exit 0, not 2).
  provisioner "shell" {
    pause_before = "30s"
    inline = [
      "sudo ${local.node_binary} check --config ${local.node_config}",
      "sudo ${local.node_binary} plan --config ${local.node_config}",
    ]
  }
}
