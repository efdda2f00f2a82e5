#!/usr/bin/env bash
# Builds the crt1.o that gpu-bootstrap's release links with (start_<arch>.S
# and init.c, see there for why) into OUTDIR/crt1.o, and the same object as
# OUTDIR/Scrt1.o, the start file gcc links into position-independent
# executables (Debian's gcc makes PIE by default; Go's external link of a
# plain executable asks for -no-pie, a -buildmode=pie build does not).
# goreleaser runs it as a pre-build hook; the link then finds them first
# through gcc's -B OUTDIR/ (gcc manual, "Options for Directory Search": -B
# names where to look for the start files crt1.o ... before the standard
# directories).
#
#   build-crt1.sh amd64|arm64 OUTDIR
set -euo pipefail

arch="${1:?usage: build-crt1.sh amd64|arm64 OUTDIR}"
out="${2:?usage: build-crt1.sh amd64|arm64 OUTDIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

case "${arch}" in
amd64) cc="${CC_AMD64:-x86_64-linux-gnu-gcc}" ;;
arm64) cc="${CC_ARM64:-aarch64-linux-gnu-gcc}" ;;
*)
	echo "build-crt1.sh: no start file for ${arch} (amd64 and arm64 only)" >&2
	exit 64
	;;
esac
if ! command -v "${cc}" >/dev/null; then
	echo "build-crt1.sh: ${cc} not found; install gcc (amd64) or gcc-aarch64-linux-gnu (arm64)" >&2
	exit 1
fi

mkdir -p "${out}"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
"${cc}" -c -fPIC -o "${tmp}/start.o" "${here}/start_${arch}.S"
"${cc}" -c -fPIC -O2 -Wall -Werror -o "${tmp}/init.o" "${here}/init.c"
# One relocatable object, as the system's crt1.o is.
"${cc}" -r -nostdlib -o "${out}/crt1.o.tmp" "${tmp}/start.o" "${tmp}/init.o"
cp "${out}/crt1.o.tmp" "${out}/Scrt1.o"
mv "${out}/crt1.o.tmp" "${out}/crt1.o"
