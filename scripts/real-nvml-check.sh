#!/usr/bin/env bash
# Runs gpu-bootstrap's read-only commands on a machine with an NVIDIA driver
# and GPUs, beside nvidia-smi's view of the same GPUs, and writes what each
# answered under OUT (default: a temporary folder). It changes no GPU
# setting: inventory, check, monitor, select and one metrics scrape only.
#
#   bash scripts/real-nvml-check.sh [path/to/gpu-bootstrap]
#
# The binary defaults to the release build in dist/ (make release-snapshot),
# which needs only glibc 2.28 and loads libnvidia-ml.so.1 at run time.
set -uo pipefail
cd "$(dirname "$0")/.."
bin="${1:-dist/gpu-bootstrap-amd64_linux_amd64_v1/gpu-bootstrap}"
out="${OUT:-$(mktemp -d)}"
mkdir -p "$out"

# run NAME CMD...: the command's stdout, stderr and exit code under $out.
run() {
	local name=$1
	shift
	timeout 60 "$@" >"$out/$name.out" 2>"$out/$name.err"
	echo "$?" >"$out/$name.rc"
	printf '%-28s exit %s\n' "$name" "$(cat "$out/$name.rc")"
}

run nvidia-smi nvidia-smi
run nvidia-smi-query nvidia-smi --query-gpu=index,uuid,name,pci.bus_id,memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.mem,persistence_mode,mig.mode.current,compute_mode,driver_version --format=csv
run nvidia-smi-topo nvidia-smi topo -m
run version "$bin" version
run inventory "$bin" inventory
run inventory-json "$bin" inventory --json
run check-json "$bin" check --json
run monitor-csv "$bin" monitor --count 3 --interval 1s --format csv
run monitor-json "$bin" monitor --count 2 --interval 1s --format json
run select "$bin" select --count 1 --format json

# The driver lifecycle and the toolkit beside gpu-bootstrap: plan and check
# only read the host. driver.branch "lts" is resolved from the lifecycle
# table and compared with the running branch.
printf 'driver:\n  branch: lts\n' >"$out/lts.yaml"
run plan-lts "$bin" plan --config "$out/lts.yaml"
run plan-lts-json "$bin" plan --config "$out/lts.yaml" --json
run check-lts-json "$bin" check --config "$out/lts.yaml" --json
run nvidia-ctk-version nvidia-ctk --version
run nvidia-runtime-config cat /etc/nvidia-container-runtime/config.toml
run cdi-dirs ls -la /etc/cdi /var/run/cdi
run cdi-refresh-units systemctl list-unit-files 'nvidia-cdi-refresh*'

"$bin" metrics --hostname-label both --listen 127.0.0.1:19400 >"$out/metrics-server.out" 2>"$out/metrics-server.err" &
server=$!
for _ in $(seq 50); do
	curl -fsS http://127.0.0.1:19400/healthz >/dev/null 2>&1 && break
	sleep 0.2
done
run metrics-scrape curl -fsS -D "$out/metrics-scrape.headers" http://127.0.0.1:19400/metrics
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null

echo "answers in $out"
