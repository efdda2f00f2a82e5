#!/usr/bin/env bash
# Reads the GPU inventory of a 5,000-node testbed cluster (plus 2,000 GPU pods)
# the way the provider does, and a baseline the way a JSON client paging like
# kubectl would, in the same process; prints time and API requests per read
# and the ratio baseline/provider.
#
#   bash bench/inventory.sh [COUNT]     # COUNT reads per variant, default 20
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-20}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT

GPU_TESTBED_REQUIRED=1 go test -count=1 -run '^$' -bench '^BenchmarkListInventory$' -benchtime "${count}x" ./internal/kube/ | tee "$out"

awk '
  /provider=/ { p_ns = $3; p_req = $7 }
  /baseline=/ { b_ns = $3; b_req = $7 }
  END {
    if (!p_ns || !b_ns) { print "benchmark lines not found" > "/dev/stderr"; exit 1 }
    printf "\nprovider: %.3f s/read, %s requests/read\n", p_ns / 1e9, p_req
    printf "baseline: %.3f s/read, %s requests/read (JSON, pages of 500)\n", b_ns / 1e9, b_req
    printf "ratio:    provider reads in %.2fx less time than the baseline\n", b_ns / p_ns
  }' "$out"
