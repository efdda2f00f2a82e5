# Builds an EKS node AMI for NVIDIA GPU instances, x86_64 or arm64 (g5g):
# starts from the latest EKS-optimized Amazon Linux 2023 AMI, installs the
# released gpu-bootstrap for that architecture (downloaded and checked
# against the release's SHA256SUMS) with its config, and runs plan, apply and
# check on a real GPU instance.
#
#   packer build -var gpu_bootstrap_version=0.1.0 .
#   packer build -var gpu_bootstrap_version=0.1.0 -var architecture=arm64 .
#
# Packer v1.9 bundles the amazon plugin. Newer Packer needs
# `packer plugins install github.com/hashicorp/amazon` first (see README.md).

locals {
  build_time       = formatdate("YYYYMMDDhhmmss", timestamp())
  bootstrap_config = var.bootstrap_config != "" ? var.bootstrap_config : "${path.root}/gpu-bootstrap.yaml"
  instance_type    = var.instance_type != "" ? var.instance_type : (var.architecture == "arm64" ? "g5g.xlarge" : "g5.xlarge")
  # gpu-bootstrap's release names the architectures as Go does.
  bootstrap_arch = var.architecture == "arm64" ? "arm64" : "amd64"
  # Where the build puts gpu-bootstrap and its config on the image.
  node_binary = "/usr/local/bin/gpu-bootstrap"
  node_config = "/etc/gpu-bootstrap/config.yaml"
}

source "amazon-ebs" "eks_gpu" {
  region          = var.region
  instance_type   = local.instance_type
  ami_name        = "${var.ami_name_prefix}-${var.architecture}-${var.kubernetes_version}-${local.build_time}"
  ami_description = "EKS ${var.kubernetes_version} AL2023 ${var.architecture} GPU node (${var.ami_variant} base) configured by gpu-bootstrap"

  # EKS names its AMIs amazon-eks-node-al2023-<arch>-<variant>-<k8s minor>-v<date>.
  source_ami_filter {
    owners      = var.ami_owners
    most_recent = true
    filters = {
      name                = "amazon-eks-node-al2023-${var.architecture}-${var.ami_variant}-${var.kubernetes_version}-v*"
      architecture        = var.architecture
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
    Architecture      = var.architecture
    BaseAMIVariant    = var.ami_variant
    SourceAMIName     = "{{ .SourceAMIName }}"
    ConfiguredBy      = "gpu-bootstrap"
  }
}

build {
  sources = ["source.amazon-ebs.eks_gpu"]

  provisioner "file" {
    source      = local.bootstrap_config
    destination = "/tmp/gpu-bootstrap.yaml"
  }

  # Downloads gpu-bootstrap_<version>_linux_<arch>.tar.gz from the GitHub
  # release, checks it against the release's SHA256SUMS, installs the binary
  # (README.md: how to check the signature of SHA256SUMS too).
  provisioner "shell" {
    script          = "${path.root}/../../bootstrap/install-gpu-bootstrap.sh"
    execute_command = "chmod +x {{ .Path }}; sudo env {{ .Vars }} {{ .Path }}"
    environment_vars = [
      "GPU_BOOTSTRAP_VERSION=${var.gpu_bootstrap_version}",
      "GPU_BOOTSTRAP_ARCH=${local.bootstrap_arch}",
      "GPU_BOOTSTRAP_BIN=${local.node_binary}",
    ]
  }

  provisioner "shell" {
    inline = [
      "sudo install -D -m 0644 /tmp/gpu-bootstrap.yaml ${local.node_config}",
      "rm -f /tmp/gpu-bootstrap.yaml",
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
