#!/usr/bin/env bash
# JOBS one-GPU Jobs through DRA (a ResourceClaimTemplate of one gpu.nvidia.com
# device) and JOBS through the NVIDIA device plugin (nvidia.com/gpu: 1), on
# one in-process testbed, ROUNDS times in alternating order: the time from the
# first Job's create to every Job's completion per path, and the ratio of the
# medians. The real kube-scheduler allocates the devices; kwok runs the pods.
#
#   bash bench/workloads-dra.sh [JOBS] [ROUNDS]     # defaults 50 3
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./bench/workloadsdra -jobs "${1:-50}" -rounds "${2:-3}"
