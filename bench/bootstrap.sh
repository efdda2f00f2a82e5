#!/usr/bin/env bash
# Times `gpu-bootstrap plan` on a root that is already configured (every step
# a no-op), as an AMI bake or a boot-time unit runs it, against two baselines
# run by this same script: `gpu-bootstrap version` (the cost of starting the
# binary at all) and, when present, `nvidia-smi --query-gpu=... --format=csv`
# (what hand-written bootstrap scripts spawn). Then runs the in-process Go
# benchmarks on a mocked DGX A100 (8 GPUs): a full plan with every step, and
# the NVML snapshot alone.
#
#   bash bench/bootstrap.sh [RUNS]      # RUNS process spawns per variant, default 50
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-50}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"

go build -o "$work/gpu-bootstrap" ./cmd/gpu-bootstrap
bin="$work/gpu-bootstrap"
root="$work/root"
mkdir -p "$root/usr/bin"
: >"$root/usr/bin/nvidia-container-runtime" # what nvidia-container-toolkit installs
cat >"$work/node.yaml" <<'YAML'
runtime:
  engine: containerd
  set_as_default: true
  enable_cdi: true
YAML

# Configure the root once; the plan that follows must have nothing to do.
"$bin" apply --config "$work/node.yaml" --root "$root" --skip-verify >/dev/null
if ! "$bin" plan --config "$work/node.yaml" --root "$root" >/dev/null; then
  echo "the root is not fully configured after apply: the benchmark would not measure a no-op plan" >&2
  exit 1
fi

# mean_ms CMD...: mean wall time of RUNS runs, in milliseconds.
mean_ms() {
  local start end
  start=$(date +%s%N)
  for ((i = 0; i < runs; i++)); do "$@" >/dev/null 2>&1 || true; done
  end=$(date +%s%N)
  awk -v ns=$((end - start)) -v n="$runs" 'BEGIN { printf "%.2f", ns / n / 1e6 }'
}

plan_ms=$(mean_ms "$bin" plan --config "$work/node.yaml" --root "$root")
version_ms=$(mean_ms "$bin" version)
printf 'gpu-bootstrap plan (configured root, no-op):  %s ms/run over %d runs\n' "$plan_ms" "$runs"
printf 'gpu-bootstrap version (process start only):   %s ms/run\n' "$version_ms"
awk -v p="$plan_ms" -v v="$version_ms" 'BEGIN { printf "ratio plan/version: %.2fx (plan work beyond starting the binary: %.2f ms)\n", p / v, p - v }'
if command -v nvidia-smi >/dev/null 2>&1; then
  smi_ms=$(mean_ms nvidia-smi --query-gpu=index,uuid,name,memory.total,persistence_mode --format=csv,noheader)
  printf 'nvidia-smi --query-gpu ... --format=csv:       %s ms/run\n' "$smi_ms"
  awk -v p="$plan_ms" -v s="$smi_ms" 'BEGIN { printf "ratio nvidia-smi/plan: %.2fx\n", s / p }'
else
  echo "nvidia-smi: not installed on this machine (no NVIDIA driver): no comparison"
fi
echo "target (issue 4): plan on a configured root <= 50 ms"

echo
go test -count=1 -run '^$' -bench 'BenchmarkPlanAllStepsNoOp|BenchmarkInventoryJSON' -benchmem ./cmd/gpu-bootstrap/
go test -count=1 -run '^$' -bench 'BenchmarkSnapshot' -benchmem ./internal/nvml/
echo "target (issue 4): inventory of 8 mocked GPUs <= 1 ms"
