#!/usr/bin/env bash
# Reads the GPU inventory of a 5,000-node testbed cluster (plus 2,000 GPU pods)
# the way the provider does, and a baseline the way a JSON client paging like
# kubectl would, in the same process; prints time and API requests per read
# and the ratio baseline/provider. Then, in the same process, the provider's
# read of the same fleet before, while and after half its nodes are DRA nodes
# (one ResourceSlice each, 1,000 allocated ResourceClaims): the cost of the
# DRA lists against the device-plugin-only read on both sides of it.
#
#   bash bench/inventory.sh [COUNT]     # COUNT reads per variant, default 20
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-20}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT

GPU_TESTBED_REQUIRED=1 go test -count=1 -run '^$' -bench '^BenchmarkListInventory(DRA)?$' -benchtime "${count}x" -timeout 60m ./internal/kube/ | tee "$out"

awk '
  function field(name,   i) { for (i = 1; i <= NF; i++) if ($(i+1) == name) return $i; return "" }
  /provider=/ { p_ns = field("ns/op"); p_req = field("requests/op") }
  /baseline=/ { b_ns = field("ns/op"); b_req = field("requests/op") }
  /fleet=device-plugin-only(-[0-9]+)?[ \t]/ { d_ns = field("ns/op"); d_req = field("requests/op") }
  /fleet=device-plugin-only-again/ { a_ns = field("ns/op") }
  /fleet=half-dra/ { h_ns = field("ns/op"); h_req = field("requests/op"); h_alloc = field("dra-allocated") }
  END {
    if (!p_ns || !b_ns || !d_ns || !h_ns || !a_ns) { print "benchmark lines not found" > "/dev/stderr"; exit 1 }
    printf "\nprovider: %.3f s/read, %s requests/read\n", p_ns / 1e9, p_req
    printf "baseline: %.3f s/read, %s requests/read (JSON, pages of 500)\n", b_ns / 1e9, b_req
    printf "ratio:    provider reads in %.2fx less time than the baseline\n", b_ns / p_ns
    printf "\ndevice-plugin-only fleet: %.3f s/read before, %.3f s/read after, %s requests/read\n", d_ns / 1e9, a_ns / 1e9, d_req
    printf "half-DRA fleet:           %.3f s/read, %s requests/read (%s DRA devices allocated)\n", h_ns / 1e9, h_req, h_alloc
    printf "ratio:    half-DRA read takes %.2fx the device-plugin-only read (mean of before and after)\n", 2 * h_ns / (d_ns + a_ns)
  }' "$out"
