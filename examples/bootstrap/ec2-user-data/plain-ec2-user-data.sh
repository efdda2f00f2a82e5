#!/bin/bash
# EC2 user data for a plain (non-EKS) Amazon Linux 2023 GPU instance, such as
# g5.xlarge: installs Docker and gpu-bootstrap, then the NVIDIA driver and
# Container Toolkit, and makes Docker run GPU containers
# (docker run --gpus all ...).
set -euo pipefail

dnf install -y docker
systemctl enable --now docker

# --- install gpu-bootstrap (begin) ---
# The release of gpu-bootstrap to install, and this machine's architecture
# in the release's names. The tar.gz is checked against the release's
# SHA256SUMS (README.md: how to check that file's GPG signature too).
GPU_BOOTSTRAP_VERSION="0.1.0"
case "$(uname -m)" in
x86_64) arch=amd64 ;;
aarch64) arch=arm64 ;;
*) echo "no gpu-bootstrap release for $(uname -m)" >&2; exit 1 ;;
esac
release="https://github.com/gpuinfra/terraform-provider-gpu/releases/download/v${GPU_BOOTSTRAP_VERSION}"
tarball="gpu-bootstrap_${GPU_BOOTSTRAP_VERSION}_linux_${arch}.tar.gz"
sums="terraform-provider-gpu_${GPU_BOOTSTRAP_VERSION}_SHA256SUMS"
dl="$(mktemp -d)"
curl -fsSL --retry 5 -o "${dl}/${tarball}" "${release}/${tarball}"
curl -fsSL --retry 5 -o "${dl}/${sums}" "${release}/${sums}"
grep "  ${tarball}\$" "${dl}/${sums}" >"${dl}/expected"
(cd "${dl}" && sha256sum -c expected)
tar -xzf "${dl}/${tarball}" -C "${dl}" gpu-bootstrap
install -D -m 0755 "${dl}/gpu-bootstrap" /usr/local/bin/gpu-bootstrap
rm -rf "${dl}"
# --- install gpu-bootstrap (end) ---

install -d -m 0755 /etc/gpu-bootstrap
cat >/etc/gpu-bootstrap/config.yaml <<'CONFIG'
driver:
  branch: "580"        # NVIDIA driver branch to install/pin: a number here, not a moving
                       # "lts" / "production", which would switch branches at a later boot
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
