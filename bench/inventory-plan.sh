#!/usr/bin/env bash
# terraform plan of gpu_inventory over NODES kwok GPU nodes (default 5,000,
# plus 1,000 GPU pods) on one in-process testbed: the default (no labels),
# include_labels of three keys, every label (the old cost) and
# include_nodes = false; the provider's read vs the rest of each plan, the
# provider's peak RSS, the API server's LIST count; and `kubectl get nodes -o
# json` on the same cluster. Terraform v1.5.7 and kube binaries come from the
# testbed cache (make testbed); kubectl at the testbed's Kubernetes version is built into it on first use.
#
#   bash bench/inventory-plan.sh [NODES] [RUNS]     # defaults 5000 3
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o "${TMPDIR:-/tmp}/inventoryplanbench" ./bench/inventoryplanbench
exec "${TMPDIR:-/tmp}/inventoryplanbench" -nodes "${1:-5000}" -runs "${2:-3}"
