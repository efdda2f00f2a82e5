#!/usr/bin/env bash
# GPU health agent figures (issue 27), on a testbed API server with the
# 8-GPU NVML double (internal/healthagent/bench_test.go):
#   1. the agent's NVML calls and CPU per minute with its default settings
#      (a sample every 5 s, events watched), over 30 s of real time, beside
#      the process' CPU over an idle 30 s and one bare Sample pass;
#   2. the time from Fleet.FireXID to the condition carrying the XID on the
#      API server (a watch of the node): median, min and max over 50 XIDs.
#
#   bash bench/health-agent.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"
GPU_TESTBED_REQUIRED=1 go test -count=1 -run '^$' -bench 'BenchmarkAgent' -benchtime 1x ./internal/healthagent/
