#!/usr/bin/env bash
# GPU telemetry figures (issue 16), in one run:
#   1. NVML calls and CPU time per Sample of 8 busy A100s on the test double
#      (internal/nvml BenchmarkTelemetrySample), beside the inventory
#      Snapshot of the same double as the baseline;
#   2. one exposition render and GET /metrics latency (p50/p99) with ten
#      concurrent scrapers, NVML read per scrape (--max-age 0) and from the
#      1 s cache (internal/telemetry/dcgm);
#   3. on a machine with the NVIDIA driver only: `nvidia-smi --query-gpu ...
#      --format=csv` against `gpu-bootstrap monitor --count 1 --format csv`,
#      a process each, RUNS times (the cost a script pays per reading).
#
#   bash bench/telemetry.sh [RUNS]      # RUNS process spawns per variant in 3., default 20
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"

go test -count=1 -run '^$' -bench 'BenchmarkTelemetrySample' -benchmem ./internal/nvml/
go test -count=1 -run '^$' -bench 'BenchmarkExpositionRender|BenchmarkScrape10Scrapers' -benchtime 2000x -benchmem ./internal/telemetry/dcgm/

echo
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "nvidia-smi: not installed on this machine (no NVIDIA driver): no process-level comparison"
  exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
go build -o "$work/gpu-bootstrap" ./cmd/gpu-bootstrap
query=timestamp,index,uuid,utilization.gpu,memory.used,temperature.gpu,power.draw,clocks.sm,clocks_throttle_reasons.active

# mean_ms CMD...: mean wall time of RUNS runs, in milliseconds.
mean_ms() {
  local start end
  start=$(date +%s%N)
  for ((i = 0; i < runs; i++)); do "$@" >/dev/null 2>&1 || true; done
  end=$(date +%s%N)
  awk -v ns=$((end - start)) -v n="$runs" 'BEGIN { printf "%.2f", ns / n / 1e6 }'
}
smi_ms=$(mean_ms nvidia-smi --query-gpu="$query" --format=csv)
gb_ms=$(mean_ms "$work/gpu-bootstrap" monitor --count 1 --format csv)
printf 'nvidia-smi --query-gpu=... --format=csv:        %s ms/run over %d runs\n' "$smi_ms" "$runs"
printf 'gpu-bootstrap monitor --count 1 --format csv:   %s ms/run\n' "$gb_ms"
awk -v s="$smi_ms" -v g="$gb_ms" 'BEGIN { printf "ratio nvidia-smi/gpu-bootstrap: %.2fx\n", s / g }'
