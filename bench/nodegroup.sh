#!/usr/bin/env bash
# terraform apply of a gpu_node_group (wait_for = "gpus_allocatable") on the
# testbed's AWS emulator, RUNS times: the AWS calls per create, and the delay
# from the last node advertising its GPUs to the apply returning.
#
#   bash bench/nodegroup.sh [RUNS]     # default 3
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./bench/nodegroupbench -runs "${1:-3}"
