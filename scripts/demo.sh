#!/usr/bin/env bash
# make demo: build the provider, start the local GPU testbed, run
# `terraform init` + `apply` on examples/quickstart through a dev_overrides CLI
# config, print the GPU inventory, then the same for examples/eks (a GPU node
# group through the AWS emulator) and examples/proxmox (a VM with a GPU passed
# through, on the Proxmox VE emulator), then destroy and stop the testbed.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS

# go-nvml's cgo preamble calls NVML functions the header marks deprecated.
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"

work="$(mktemp -d "${TMPDIR:-/tmp}/gpu-demo.XXXXXX")"
testbed=("$work/gpu-testbed")

cleanup() {
  status=$?
  for dir in quickstart dra eks proxmox; do
    if [[ -n "${tf:-}" && -d "$work/$dir/.terraform" ]]; then
      "$tf" -chdir="$work/$dir" destroy -auto-approve -no-color -var cluster_name="${GPU_TESTBED_EKS_CLUSTER:-}" >/dev/null 2>&1 || true
    fi
  done
  if [[ -x "${testbed[0]}" ]]; then
    "${testbed[@]}" down --dir "$work/testbed" || true
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT INT TERM

# gpu-testbed first, alone: it builds the testbed's binaries. Then those
# builds and the provider's and gpu-bootstrap's run side by side, so that
# neither leaves a core idle while the other links or downloads. The go
# command's `go: downloading` lines go to a log, shown only when it fails.
log="$work.go-build.log"
go_build() {
  if ! go build -o "$work/" "$@" >>"$log" 2>&1; then
    tail -n 25 "$log"
    echo "demo: go build failed; the lines above are the end of $log" >&2
    return 1
  fi
}
echo "==> building gpu-testbed (log: $log)"
go_build ./cmd/gpu-testbed
echo "    built in $((SECONDS - started))s"

echo "==> building the testbed's binaries (only what the demo runs: etcd, Kubernetes, kwok, Terraform; make testbed also builds OpenTofu and Packer), and beside them the provider and gpu-bootstrap"
go_build ./cmd/gpu-bootstrap . &
programs=$!
"${testbed[@]}" install --only demo --tools-dir tools
wait "$programs"
rm -f "$log"
mkdir -p "$work/plugins"
mv "$work/terraform-provider-gpu" "$work/plugins/"
echo "    demo ready to start after $((SECONDS - started))s"

echo "==> starting the testbed (etcd, kube-apiserver, controller-manager, scheduler, kwok GPU nodes)"
"${testbed[@]}" up --dir "$work/testbed"
eval "$("${testbed[@]}" env --dir "$work/testbed")"
tf="$("${testbed[@]}" env --terraform-path)"

# dev_overrides runs the provider just built; the filesystem mirror holding
# the same binary lets `terraform init` finish without a registry.
platform="$(go env GOOS)_$(go env GOARCH)"
mkdir -p "$work/mirror/registry.terraform.io/gpuinfra/gpu/0.0.1/$platform"
cp "$work/plugins/terraform-provider-gpu" "$work/mirror/registry.terraform.io/gpuinfra/gpu/0.0.1/$platform/"
cat >"$work/terraformrc" <<RC
provider_installation {
  dev_overrides {
    "gpuinfra/gpu" = "$work/plugins"
  }
  filesystem_mirror {
    path    = "$work/mirror"
    include = ["registry.terraform.io/gpuinfra/gpu"]
  }
  direct {
    exclude = ["registry.terraform.io/gpuinfra/gpu"]
  }
}
RC
export TF_CLI_CONFIG_FILE="$work/terraformrc"
export TF_IN_AUTOMATION=1

# Work on a copy so the example directory stays clean.
cp -r examples/quickstart "$work/quickstart"

echo "==> terraform init"
"$tf" -chdir="$work/quickstart" init -input=false -no-color >/dev/null
echo "==> terraform apply"
if ! "$tf" -chdir="$work/quickstart" apply -input=false -auto-approve -no-color >"$work/apply.log" 2>&1; then
  cat "$work/apply.log"
  exit 1
fi
grep '^Apply complete' "$work/apply.log"
echo
echo "==> GPU inventory of the testbed"
"$tf" -chdir="$work/quickstart" output -no-color
echo
echo "==> terraform destroy"
"$tf" -chdir="$work/quickstart" destroy -input=false -auto-approve -no-color >/dev/null

# GPUs through DRA on the testbed's dra-* nodes: NVIDIA's DRA driver, a service
# whose first alternative (a B200) no node has, landing on its second (two
# A100s), and the inventory counting the DRA devices it holds.
cp -r examples/dra "$work/dra"
echo
echo "==> DRA: terraform apply examples/dra"
"$tf" -chdir="$work/dra" init -input=false -no-color >/dev/null
if ! "$tf" -chdir="$work/dra" apply -input=false -auto-approve -no-color >"$work/dra-apply.log" 2>&1; then
  cat "$work/dra-apply.log"
  exit 1
fi
grep '^Apply complete' "$work/dra-apply.log"
"$tf" -chdir="$work/dra" output -no-color
"$tf" -chdir="$work/dra" destroy -input=false -auto-approve -no-color >/dev/null

# EKS through the testbed's AWS emulator: the device plugin, a p5.48xlarge
# node group that apply returns from once its 16 GPUs are allocatable, and a
# job on them, reached with an EKS token (no kubeconfig).
echo
echo "==> EKS: terraform apply examples/eks (cluster $GPU_TESTBED_EKS_CLUSTER of the AWS emulator)"
cp -r examples/eks "$work/eks"
"$tf" -chdir="$work/eks" init -input=false -no-color >/dev/null
if ! KUBECONFIG=/dev/null "$tf" -chdir="$work/eks" apply -input=false -auto-approve -no-color \
  -var cluster_name="$GPU_TESTBED_EKS_CLUSTER" >"$work/eks-apply.log" 2>&1; then
  cat "$work/eks-apply.log"
  exit 1
fi
grep -E '^gpu_node_group.h100: Creation complete|^Apply complete' "$work/eks-apply.log"
"$tf" -chdir="$work/eks" output -no-color
if command -v aws >/dev/null; then
  echo
  echo "==> aws eks describe-nodegroup --cluster-name $GPU_TESTBED_EKS_CLUSTER --nodegroup-name h100"
  aws eks describe-nodegroup --cluster-name "$GPU_TESTBED_EKS_CLUSTER" --nodegroup-name h100 \
    --query 'nodegroup.{status:status,instanceTypes:instanceTypes,amiType:amiType,scaling:scalingConfig,labels:labels}' --output json
fi
echo "==> terraform destroy (EKS)"
KUBECONFIG=/dev/null "$tf" -chdir="$work/eks" destroy -input=false -auto-approve -no-color -var cluster_name="$GPU_TESTBED_EKS_CLUSTER" >/dev/null

# Proxmox VE through the testbed's emulator: a VM cloned from a template with
# an RTX A6000 passed through by cluster PCI mapping (the API token from
# PM_API_TOKEN_ID, TLS verified against PM_CA_CERT_FILE), started, then the
# node's GPUs as gpu_inventory (source "proxmox") lists them.
echo
echo "==> Proxmox VE: terraform apply examples/proxmox (the testbed's Proxmox VE emulator at $PM_API_URL)"
cp -r examples/proxmox "$work/proxmox"
"$tf" -chdir="$work/proxmox" init -input=false -no-color >/dev/null
if ! "$tf" -chdir="$work/proxmox" apply -input=false -auto-approve -no-color >"$work/proxmox-apply.log" 2>&1; then
  cat "$work/proxmox-apply.log"
  exit 1
fi
grep -E '^gpu_passthrough_vm.gpu: Creation complete|^Apply complete' "$work/proxmox-apply.log"
echo
echo "==> the passthrough VM and the Proxmox GPU inventory (every node)"
"$tf" -chdir="$work/proxmox" output -no-color
echo "==> terraform destroy (Proxmox)"
"$tf" -chdir="$work/proxmox" destroy -input=false -auto-approve -no-color >/dev/null

# The node side: gpu-bootstrap on this machine (which has no NVIDIA driver),
# configuring a scratch root so nothing of this machine's changes.
echo
echo "==> gpu-bootstrap (node side) on this machine"
"$work/gpu-bootstrap" inventory
node="$work/node-root"
mkdir -p "$node/etc/containerd" "$node/usr/bin"
: >"$node/usr/bin/nvidia-container-runtime" # what nvidia-container-toolkit installs
printf '# a hand-written config: its comments and settings are kept\nversion = 2\n\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "registry.k8s.io/pause:3.10"\n' >"$node/etc/containerd/config.toml"
echo
echo "==> gpu-bootstrap plan --root $node --runtime containerd --runtime-default   (exit 2: changes pending)"
"$work/gpu-bootstrap" plan --root "$node" --runtime containerd --runtime-default || test $? -eq 2
echo
echo "==> gpu-bootstrap apply ... --skip-verify   (then a second apply has nothing to do)"
"$work/gpu-bootstrap" apply --root "$node" --runtime containerd --runtime-default --skip-verify
"$work/gpu-bootstrap" apply --root "$node" --runtime containerd --runtime-default --skip-verify | tail -1
echo
echo "demo finished in $((SECONDS - started))s: the testbed is stopped on exit"
