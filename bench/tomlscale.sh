#!/usr/bin/env bash
# Times `gpu-bootstrap plan` for containerd and CRI-O on engine configs with
# COUNTS runtime tables each (a config that grew by generation or by hand),
# and reports the time per table at each size against the smallest size, run
# in this same script: a linear plan keeps the ratio near 1 (issue 8 measured
# 5k tables 0.7 s, 20k 6.3 s, 40k 24 s before: per table 1x, 2.2x, 4.3x).
# `gpu-bootstrap version` is the baseline for starting the binary, subtracted
# before dividing by the table count.
#
#   bash bench/tomlscale.sh [COUNTS]    # default "5000 10000 20000 40000"
set -euo pipefail
cd "$(dirname "$0")/.."
counts="${1:-5000 10000 20000 40000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"
go build -o "$work/gpu-bootstrap" ./cmd/gpu-bootstrap
bin="$work/gpu-bootstrap"

# best_ms CMD...: the fastest of 3 runs, in milliseconds (the least disturbed
# by other work on the machine). An error (exit 1; plan exits 2 for changes
# pending, which these roots have) stops the benchmark.
best_ms() {
  local best="" start end ms rc
  for _ in 1 2 3; do
    start=$(date +%s%N)
    rc=0
    "$@" >"$work/out" 2>&1 || rc=$?
    if [[ $rc -ne 0 && $rc -ne 2 ]]; then cat "$work/out" >&2; exit 1; fi
    end=$(date +%s%N)
    ms=$(((end - start) / 1000000))
    if [[ -z "$best" || "$ms" -lt "$best" ]]; then best=$ms; fi
  done
  echo "$best"
}

# root ENGINE N: a root whose engine config has N runtimes besides runc.
root() {
  local engine=$1 n=$2 dir="$work/$1-$2"
  mkdir -p "$dir/usr/bin"
  : >"$dir/usr/bin/nvidia-container-runtime"
  if [[ $engine == containerd ]]; then
    mkdir -p "$dir/etc/containerd"
    awk -v n="$n" 'BEGIN {
      print "version = 2\n"
      print "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  default_runtime_name = \"runc\"\n"
      print "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\""
      print "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n    SystemdCgroup = true"
      for (i = 0; i < n; i++) {
        printf "\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.r%d]\n  runtime_type = \"io.containerd.runc.v2\"\n", i
        printf "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.r%d.options]\n    BinaryName = \"/usr/bin/r%d\"\n", i, i
      }
    }' >"$dir/etc/containerd/config.toml"
  else
    mkdir -p "$dir/etc/crio/crio.conf.d"
    awk -v n="$n" 'BEGIN {
      print "[crio.runtime]\ndefault_runtime = \"crun\"\n"
      print "[crio.runtime.runtimes.crun]\nruntime_path = \"/usr/bin/crun\"\nruntime_type = \"oci\"\nruntime_root = \"/run/crun\""
      for (i = 0; i < n; i++) {
        printf "\n[crio.runtime.runtimes.r%d]\nruntime_path = \"/usr/bin/r%d\"\nruntime_type = \"oci\"\n", i, i
      }
    }' >"$dir/etc/crio/crio.conf"
  fi
  printf 'runtime:\n  engine: %s\n  set_as_default: true\n  enable_cdi: true\n' "$engine" >"$dir.yaml"
  echo "$dir"
}

version_ms=$(best_ms "$bin" version)
echo "gpu-bootstrap version (process start): ${version_ms} ms"
printf '%-10s %8s %10s %14s %16s\n' engine tables "plan ms" "us per table" "vs smallest"
for engine in containerd crio; do
  base=""
  for n in $counts; do
    dir=$(root "$engine" "$n")
    ms=$(best_ms "$bin" plan --config "$dir.yaml" --root "$dir")
    grep -q nvidia "$work/out" || { echo "the plan does not mention nvidia:" >&2; cat "$work/out" >&2; exit 1; }
    per=$(awk -v m="$ms" -v v="$version_ms" -v n="$n" 'BEGIN { printf "%.2f", (m - v) * 1000 / n }')
    [[ -n "$base" ]] || base=$per
    ratio=$(awk -v p="$per" -v b="$base" 'BEGIN { printf "%.2fx", p / b }')
    printf '%-10s %8d %10d %14s %16s\n' "$engine" "$n" "$ms" "$per" "$ratio"
  done
done
