#!/usr/bin/env bash
# Create + start of a Proxmox VE VM with a GPU passed through, on the
# testbed's Proxmox VE emulator: this project's backend against
# Telmate/proxmox-api-go's own task waits, in one process, RUNS times each.
#
#   bash bench/passthrough.sh [RUNS]     # default 3
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./bench/passthroughbench -runs "${1:-3}"
