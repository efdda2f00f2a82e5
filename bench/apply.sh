#!/usr/bin/env bash
# terraform apply of gpu_device_plugin + JOBS gpu_workload Jobs on a fresh
# testbed: wall time, the share spent waiting on the cluster vs overhead, and
# the delay between a Job becoming Complete and the provider noticing.
#
#   bash bench/apply.sh [JOBS]     # default 20
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./bench/applybench -jobs "${1:-20}"
