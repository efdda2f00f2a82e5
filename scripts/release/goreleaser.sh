#!/usr/bin/env bash
# Prints the path of GoReleaser ${GORELEASER_VERSION}, building it from the
# Go module proxy the first time (go install, about 4.5 minutes on a 2-core
# machine) into the testbed's cache, <cache>/bin/goreleaser-<version>/
# (<cache>: $GPU_TESTBED_CACHE, else $XDG_CACHE_HOME/terraform-provider-gpu,
# else ~/.cache/terraform-provider-gpu, as internal/testbed's CacheRoot).
# A lock file keeps two builds at once from racing; a half-built binary is
# never left at the final path (go install writes to a temporary GOBIN).
#
# The version is pinned: v2.16.0 is the newest GoReleaser whose go.mod a Go
# 1.26 toolchain can build (v2.18 asks for go 1.27) and whose dependencies the
# module proxy serves in full (v2.17.0's nfpm v2.47 needs go.digitalxero.dev/
# go-msix, which the Go module proxy answers with 403).
set -euo pipefail

version="${GORELEASER_VERSION:-v2.16.0}"
if [[ -n "${GORELEASER:-}" ]]; then
	echo "${GORELEASER}"
	exit 0
fi

if [[ -n "${GPU_TESTBED_CACHE:-}" ]]; then
	cache="$(cd "${GPU_TESTBED_CACHE}" 2>/dev/null && pwd || echo "${GPU_TESTBED_CACHE}")"
elif [[ -n "${XDG_CACHE_HOME:-}" ]]; then
	cache="${XDG_CACHE_HOME}/terraform-provider-gpu"
else
	cache="${HOME}/.cache/terraform-provider-gpu"
fi
dir="${cache}/bin/goreleaser-${version}"
bin="${dir}/goreleaser"
mkdir -p "${dir}"

exec 9>"${dir}.lock"
flock 9
if [[ ! -x "${bin}" ]]; then
	echo "goreleaser.sh: building GoReleaser ${version} from the Go module proxy (once, a few minutes)" >&2
	tmp="$(mktemp -d "${dir}.tmp.XXXXXX")"
	trap 'rm -rf "${tmp}"' EXIT
	# GOFLAGS from the caller (-mod=vendor and such) do not apply to this module.
	(cd "${tmp}" && GOFLAGS= GOBIN="${tmp}" go install "github.com/goreleaser/goreleaser/v2@${version}") >&2
	mv "${tmp}/goreleaser" "${bin}"
fi
echo "${bin}"
