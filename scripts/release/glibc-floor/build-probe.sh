#!/usr/bin/env bash
# Builds ctor_probe.c as gpu-bootstrap's release is linked (build-crt1.sh's
# crt1.o found through -B, glibc_floor.h, libdl.so.2 and libpthread.so.0):
#
#   build-probe.sh amd64|arm64 OUT
set -euo pipefail

arch="${1:?usage: build-probe.sh amd64|arm64 OUT}"
out="${2:?usage: build-probe.sh amd64|arm64 OUT}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
case "${arch}" in
amd64) cc="${CC_AMD64:-x86_64-linux-gnu-gcc}" ;;
arm64) cc="${CC_ARM64:-aarch64-linux-gnu-gcc}" ;;
*)
	echo "build-probe.sh: amd64 or arm64, not ${arch}" >&2
	exit 64
	;;
esac

start="$(mktemp -d)"
trap 'rm -rf "${start}"' EXIT
bash "${here}/build-crt1.sh" "${arch}" "${start}"
"${cc}" -O2 -Wall -Werror -include "${here}/glibc_floor.h" -B"${start}/" \
	-o "${out}" "${here}/ctor_probe.c" -Wl,--no-as-needed -l:libdl.so.2 -l:libpthread.so.0
