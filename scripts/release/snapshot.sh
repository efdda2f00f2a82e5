#!/usr/bin/env bash
# make release-snapshot: builds every artifact of a release into dist/ the way
# a tagged release does (.goreleaser.yml), without signing or publishing:
# the provider's zips, gpu-bootstrap's tar.gz, .deb and .rpm for linux/amd64
# and linux/arm64, and the SHA256SUMS over all of them.
#
# Needs: Go, gcc and gcc-aarch64-linux-gnu (the C compilers of gpu-bootstrap's
# two builds), git (GoReleaser reads the commit). The network is used only
# the first time, for the Go module proxy (GoReleaser itself and the module's
# dependencies).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${root}"

for cc in x86_64-linux-gnu-gcc aarch64-linux-gnu-gcc; do
	if ! command -v "${cc}" >/dev/null; then
		echo "release-snapshot: ${cc} not found; install the Debian packages gcc and gcc-aarch64-linux-gnu (libc6-dev-arm64-cross)" >&2
		exit 1
	fi
done

goreleaser="$(bash scripts/release/goreleaser.sh)"
# --snapshot: version from the commit, nothing published; --skip=sign: the
# release's GPG key is CI's secret (signs: in .goreleaser.yml).
exec "${goreleaser}" release --snapshot --clean --skip=sign "$@"
