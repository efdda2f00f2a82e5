#!/usr/bin/env bash
# terraform apply of 20 one-GPU gpu_workload Jobs (default parallelism) and
# of 200 (-parallelism=50), then terraform plan with the 200 in state, for
# this tree's provider and a baseline built from BASE (a git worktree), on
# one testbed with enough kwok GPU nodes: wall time, the API server's read
# requests, watches open at once, the provider's peak memory.
#
#   bash bench/workloads.sh [BASE] [SMALL] [LARGE]   # default ae8e146 20 200
set -euo pipefail
cd "$(dirname "$0")/.."
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
go run ./bench/workloadsbench -base "${1:-ae8e146}" -small "${2:-20}" -large "${3:-200}"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
