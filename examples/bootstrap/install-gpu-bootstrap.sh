#!/bin/sh
# Installs a released gpu-bootstrap: downloads the tar.gz for this machine's
# architecture from the GitHub release of terraform-provider-gpu, checks its
# SHA-256 against the release's SHA256SUMS file (and, given the release's
# public key, the GPG signature of that file), and installs the binary.
# The Packer examples upload and run it; the user-data examples carry the
# same steps inline.
#
# Environment:
#   GPU_BOOTSTRAP_VERSION   release to install, such as 0.1.0 (required)
#   GPU_BOOTSTRAP_ARCH      amd64 or arm64 (default: from uname -m)
#   GPU_BOOTSTRAP_GPG_KEY   file with the release's ASCII-armored public key:
#                           when set, the SHA256SUMS signature must verify
#   GPU_BOOTSTRAP_BIN       where to install (default /usr/local/bin/gpu-bootstrap)
#   GPU_BOOTSTRAP_RELEASES  base URL of the releases (default GitHub's; a mirror
#                           must keep the same file names)
#
# Needs curl, sha256sum, tar (and gpgv, gpg for the signature). POSIX sh.
set -eu

version="${GPU_BOOTSTRAP_VERSION:?set GPU_BOOTSTRAP_VERSION to the gpu-bootstrap release to install, such as 0.1.0}"
version="${version#v}"
releases="${GPU_BOOTSTRAP_RELEASES:-https://github.com/gpuinfra/terraform-provider-gpu/releases/download}"
bin="${GPU_BOOTSTRAP_BIN:-/usr/local/bin/gpu-bootstrap}"

arch="${GPU_BOOTSTRAP_ARCH:-}"
if [ -z "${arch}" ]; then
	case "$(uname -m)" in
	x86_64) arch=amd64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*)
		echo "install-gpu-bootstrap: no gpu-bootstrap release for $(uname -m) (amd64 and arm64 only)" >&2
		exit 1
		;;
	esac
fi
case "${arch}" in
amd64 | arm64) ;;
*)
	echo "install-gpu-bootstrap: GPU_BOOTSTRAP_ARCH=${arch}: want amd64 or arm64" >&2
	exit 1
	;;
esac

# Release file names, as .goreleaser.yml writes them.
tarball="gpu-bootstrap_${version}_linux_${arch}.tar.gz"
sums="terraform-provider-gpu_${version}_SHA256SUMS"
url="${releases}/v${version}"

dl="$(mktemp -d)"
trap 'rm -rf "${dl}"' EXIT
curl -fsSL --retry 5 -o "${dl}/${tarball}" "${url}/${tarball}"
curl -fsSL --retry 5 -o "${dl}/${sums}" "${url}/${sums}"

if [ -n "${GPU_BOOTSTRAP_GPG_KEY:-}" ]; then
	# The release signs SHA256SUMS with a detached GPG signature (.sig).
	curl -fsSL --retry 5 -o "${dl}/${sums}.sig" "${url}/${sums}.sig"
	gpg --dearmor <"${GPU_BOOTSTRAP_GPG_KEY}" >"${dl}/release-key.gpg"
	if ! gpgv --keyring "${dl}/release-key.gpg" "${dl}/${sums}.sig" "${dl}/${sums}" 2>"${dl}/gpgv.out"; then
		cat "${dl}/gpgv.out" >&2
		echo "install-gpu-bootstrap: the signature of ${sums} does not verify with ${GPU_BOOTSTRAP_GPG_KEY}" >&2
		exit 1
	fi
fi

# The tarball's line of SHA256SUMS, checked by sha256sum; no line fails too.
if ! grep "  ${tarball}\$" "${dl}/${sums}" >"${dl}/expected"; then
	echo "install-gpu-bootstrap: ${sums} has no line for ${tarball}" >&2
	exit 1
fi
(cd "${dl}" && sha256sum -c expected)

tar -xzf "${dl}/${tarball}" -C "${dl}" gpu-bootstrap
install -D -m 0755 "${dl}/gpu-bootstrap" "${bin}"
"${bin}" version
