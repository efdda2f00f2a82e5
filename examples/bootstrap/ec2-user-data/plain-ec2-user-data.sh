#!/bin/bash
# EC2 user data for a plain (non-EKS) Amazon Linux 2023 GPU instance, such as
# g5.xlarge: installs Docker and gpu-bootstrap, then the NVIDIA driver and
# Container Toolkit, and makes Docker run GPU containers
# (docker run --gpus all ...).
set -euo pipefail

GPU_BOOTSTRAP_URL="https://artifacts.example.com/gpu-bootstrap/linux-amd64/gpu-bootstrap"
GPU_BOOTSTRAP_SHA256="0000000000000000000000000000000000000000000000000000000000000000"

dnf install -y docker
systemctl enable --now docker

curl -fsSL --retry 5 -o /tmp/gpu-bootstrap "${GPU_BOOTSTRAP_URL}"
echo "${GPU_BOOTSTRAP_SHA256}  /tmp/gpu-bootstrap" | sha256sum -c -
install -D -m 0755 /tmp/gpu-bootstrap /usr/local/bin/gpu-bootstrap
rm -f /tmp/gpu-bootstrap

install -d -m 0755 /etc/gpu-bootstrap
cat >/etc/gpu-bootstrap/config.yaml <<'CONFIG'
driver:
  branch: "570"        # NVIDIA driver branch to install/pin
  kernel_modules: open # open | proprietary
toolkit:
  install: true        # nvidia-container-runtime, which Docker's nvidia runtime runs
persistence: true
runtime:
  engine: docker       # containerd | docker | crio
  set_as_default: true
  enable_cdi: true
cdi:
  enabled: true
verify:
  expect_gpus: 0       # 0 = any
CONFIG

# Docker is running, so let apply restart it to load the new runtime config.
/usr/local/bin/gpu-bootstrap apply --restart-runtime --config /etc/gpu-bootstrap/config.yaml
/usr/local/bin/gpu-bootstrap check --config /etc/gpu-bootstrap/config.yaml
