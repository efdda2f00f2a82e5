#!/usr/bin/env bash
# The one list of Debian packages this project's checks use beyond Go, gcc,
# make and git, and the one place that installs them. `make test`,
# `make check-release` and `make generate` call it with their group before
# they start; .ci/run installs nothing else.
#
#   bash scripts/debian-packages.sh GROUP...   (groups: test, release, generate)
#
# What is present is left alone and nothing is printed. As root, what is
# missing is installed (`apt-get update` once, then one `apt-get install`,
# one progress line; apt's output goes to a log shown only when it fails).
# Not as root, it stops before any test and names the one command to run.
set -euo pipefail

# group  what-is-looked-for  package  (why)
# What is looked for is a command on PATH, or a path (starting with /).
packages='
test     debootstrap           debootstrap                gpu-bootstrap driver and toolkit steps against real apt/dpkg in Debian roots
test     dpkg-deb              dpkg                       the models of NVIDIA repositories build .deb packages
test     dpkg-scanpackages     dpkg-dev                   ... and index them
test     apt-ftparchive        apt-utils                  ... and write their Release files
test     dnf                   dnf                        the same steps against real dnf/rpm
test     /usr/lib/python3/dist-packages/dnf-plugins/versionlock.py  dnf-plugins-core  dnf config-manager and versionlock
test     rpm                   rpm                        rpm databases in the dnf roots
test     rpmbuild              rpm                        the models of NVIDIA repositories build .rpm packages
test     createrepo_c          createrepo-c               ... and index them
test     modifyrepo_c          createrepo-c               ... with module metadata
test     gpg                   gnupg                      ... and sign them
test     zstd                  zstd                       Debian roots are cached as zstd tarballs
test     curl                  curl                       a PVE client nobody here wrote, against the Proxmox VE emulator
test     /usr/lib/python3/dist-packages/proxmoxer  python3-proxmoxer  another one: python3-proxmoxer
test     aws                   awscli                     the AWS CLI against the EKS and EC2 emulator
test     promtool              prometheus                 gpu-bootstrap metrics exposition checked by promtool
test     prometheus            prometheus                 ... and scraped by a real Prometheus server
test     qemu-aarch64-static   qemu-user-static           arm64 Debian roots and release binaries under qemu-user
release  aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu      gpu-bootstrap for arm64 (cgo)
release  /usr/aarch64-linux-gnu/lib/libc.so.6  libc6-dev-arm64-cross  ... against the arm64 C library
release  aarch64-linux-gnu-objdump  binutils-aarch64-linux-gnu  the glibc floor of the arm64 binary
release  objdump               binutils                   ... and of the amd64 one
release  qemu-aarch64-static   qemu-user-static           the arm64 binary run under qemu-user
release  dpkg-deb              dpkg                       the .deb installed with dpkg
release  rpm                   rpm                        the .rpm installed with rpm
release  systemd-analyze       systemd                    the metrics unit checked by systemd-analyze verify
generate jq                    jq                         make generate reads the provider schema
'

usage() {
	echo "usage: $0 GROUP... (test, release, generate)" >&2
	exit 2
}
(($#)) || usage

present() {
	if [[ "$1" == /* ]]; then
		[[ -e "$1" ]]
	else
		command -v "$1" >/dev/null 2>&1
	fi
}

missing=()
for group in "$@"; do
	[[ "${group}" =~ ^(test|release|generate)$ ]] || usage
	while read -r line_group wanted package _; do
		[[ "${line_group}" == "${group}" ]] || continue
		present "${wanted}" || missing+=("${package}")
	done <<<"${packages}"
done
((${#missing[@]})) || exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)

if [[ "$(id -u)" != 0 ]]; then
	echo "$*: missing Debian packages: ${missing[*]}" >&2
	echo "run once: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "$*: missing: ${missing[*]} (Debian package names); this machine has no apt-get: install their equivalents" >&2
	exit 1
fi

log="$(mktemp -t debian-packages.XXXXXX.log)"
echo "installing ${#missing[@]} Debian packages for $*: ${missing[*]} (apt log: ${log})"
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq "${missing[@]}"; } >"${log}" 2>&1; then
	tail -n 30 "${log}" >&2
	echo "apt-get failed installing: ${missing[*]} (full log: ${log})" >&2
	exit 1
fi
rm -f "${log}"
