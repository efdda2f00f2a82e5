#!/usr/bin/env bash
# make check-release: checks gpu-bootstrap's release artifacts in dist/ (made
# by `make release-snapshot` or a tagged release) as users get them:
#
#   1. SHA256SUMS: every file it lists verifies, and it lists both tar.gz,
#      both .deb and both .rpm.
#   2. glibc floor: `objdump -T` of both binaries (aarch64-linux-gnu-objdump
#      for arm64) shows no GLIBC_ symbol version above 2.28 (RHEL 8's glibc).
#   3. arm64 under qemu-user (qemu-aarch64-static -L /usr/aarch64-linux-gnu):
#      version, inventory (no driver: says so, exit 0), plan and apply on a
#      fixture root (a containerd config gets the nvidia runtime), and a
#      second plan that finds nothing to do.
#   4. amd64 inside a Debian 11 root (bullseye, glibc 2.31, debootstrap via
#      `gpu-testbed rootfs`) and arm64 inside a Debian 11 arm64 root (under
#      qemu-user through binfmt_misc): the same commands, under chroot, so
#      the root's own dynamic linker and libc load it; and the start file's
#      probe (glibc-floor/ctor_probe.c): constructors run once on old and new
#      glibc.
#   5. the amd64 .deb installed with the real dpkg into a Debian 12 root:
#      /usr/bin/gpu-bootstrap runs, /etc/gpu-bootstrap/config.yaml is a
#      conffile, an edited config survives a reinstall and a remove, and
#      purge removes it; the metrics unit is installed (the example's bytes),
#      passes the host's `systemd-analyze verify` with its command pointed at
#      the root's binary, and goes with `dpkg -r`.
#   6. both .rpm with the real rpm into an empty --root: files (the metrics
#      unit among them), the config marked %config(noreplace), an edited
#      config kept on reinstall.
#
# Needs root (chroot, dpkg into a root), systemd-analyze, binutils, binutils-aarch64-linux-gnu,
# gcc and gcc-aarch64-linux-gnu (the probe), qemu-user-static, debootstrap
# (first run: the machine's Debian mirror, taken from its apt sources or from
# $GPU_TESTBED_DEBIAN_MIRROR; then cached), rpm. Any missing tool fails the
# check with what to install.
#
#   check.sh [DIST]   (default: dist)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dist="$(cd "${1:-${root}/dist}" && pwd)"
cd "${root}"

# The highest symbol version a release binary may need: RHEL 8 / Rocky 8.
floor="2.28"

fail() {
	printf 'check-release: FAIL: %b\n' "$*" >&2
	exit 1
}
ok() { echo "ok   $*"; }

need() {
	local tool="$1" pkg="$2"
	command -v "${tool}" >/dev/null || fail "${tool} not found; install the Debian package ${pkg}"
}
need objdump binutils
need aarch64-linux-gnu-objdump binutils-aarch64-linux-gnu
need qemu-aarch64-static qemu-user-static
need dpkg-deb dpkg
need rpm rpm
need chroot coreutils
need systemd-analyze systemd
[[ "$(id -u)" == 0 ]] || fail "needs root (chroot and dpkg into a Debian root); run it with sudo"
[[ -d /usr/aarch64-linux-gnu/lib ]] || fail "/usr/aarch64-linux-gnu/lib missing; install libc6-arm64-cross"

work="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-release.XXXXXX")"
cleanup() {
	# Roots are plain directories (nothing is mounted into them).
	rm -rf "${work}"
}
trap cleanup EXIT

# --- 1. checksums --------------------------------------------------------
sums=("${dist}"/*_SHA256SUMS)
[[ -f "${sums[0]}" ]] || fail "no *_SHA256SUMS in ${dist}; run make release-snapshot first"
((${#sums[@]} == 1)) || fail "more than one SHA256SUMS in ${dist}: ${sums[*]}"
sums="${sums[0]}"
# Every listed file verifies. The registry manifest is listed under its
# release name (terraform-provider-gpu_<version>_manifest.json), which the
# release step gives terraform-registry-manifest.json when it uploads it; a
# snapshot has only the repository's file, so that line is checked against it.
checked=0
while read -r sum name; do
	file="${dist}/${name}"
	if [[ ! -e "${file}" && "${name}" == *_manifest.json ]]; then
		file="${root}/terraform-registry-manifest.json"
	fi
	[[ -e "${file}" ]] || fail "$(basename "${sums}") lists ${name}, which is not in ${dist}"
	[[ "$(sha256sum "${file}" | cut -d' ' -f1)" == "${sum}" ]] || fail "${name}: its SHA-256 differs from $(basename "${sums}")'s"
	checked=$((checked + 1))
done <"${sums}"
((checked > 0)) || fail "$(basename "${sums}") is empty"

version=""
for arch in amd64 arm64; do
	tgz=("${dist}"/gpu-bootstrap_*_linux_"${arch}".tar.gz)
	[[ -f "${tgz[0]}" ]] || fail "no gpu-bootstrap_<version>_linux_${arch}.tar.gz in ${dist}"
	v="$(basename "${tgz[0]}")"
	v="${v#gpu-bootstrap_}"
	v="${v%_linux_"${arch}".tar.gz}"
	[[ -z "${version}" || "${version}" == "${v}" ]] || fail "tar.gz versions differ: ${version} and ${v}"
	version="${v}"
done
rpmarch() { case "$1" in amd64) echo x86_64 ;; arm64) echo aarch64 ;; esac; }
for arch in amd64 arm64; do
	for pattern in "gpu-bootstrap_${version}_linux_${arch}.tar.gz" "gpu-bootstrap_*_${arch}.deb" "gpu-bootstrap-*.$(rpmarch "${arch}").rpm"; do
		# shellcheck disable=SC2086 # the pattern is a glob on purpose
		file="$(cd "${dist}" && ls ${pattern} 2>/dev/null | head -n1)"
		[[ -n "${file}" ]] || fail "no ${pattern} in ${dist}"
		grep -q "  ${file}\$" "${sums}" || fail "${file} is not in $(basename "${sums}")"
	done
done
ok "$(basename "${sums}") verifies and covers gpu-bootstrap ${version}'s tar.gz, .deb and .rpm for amd64 and arm64"

# --- 2. glibc floor ------------------------------------------------------
for arch in amd64 arm64; do
	mkdir -p "${work}/${arch}"
	tar -xzf "${dist}/gpu-bootstrap_${version}_linux_${arch}.tar.gz" -C "${work}/${arch}"
	[[ -x "${work}/${arch}/gpu-bootstrap" ]] || fail "gpu-bootstrap_${version}_linux_${arch}.tar.gz has no executable gpu-bootstrap at its top"
done
machine() { readelf -h "$1" | sed -n 's/^ *Machine: *//p'; }
[[ "$(machine "${work}/amd64/gpu-bootstrap")" == *X86-64* ]] || fail "the amd64 binary is $(machine "${work}/amd64/gpu-bootstrap")"
[[ "$(machine "${work}/arm64/gpu-bootstrap")" == *AArch64* ]] || fail "the arm64 binary is $(machine "${work}/arm64/gpu-bootstrap")"

check_floor() {
	local arch="$1" objdump="$2" bin="$3" versions highest
	versions="$("${objdump}" -T "${bin}" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/^GLIBC_//' | sort -uV)"
	[[ -n "${versions}" ]] || fail "${arch}: objdump -T shows no GLIBC_ versions at all (not a dynamically linked glibc binary?)"
	highest="$(tail -n1 <<<"${versions}")"
	if [[ "$(printf '%s\n%s\n' "${highest}" "${floor}" | sort -V | tail -n1)" != "${floor}" ]]; then
		echo "${arch}: symbols above GLIBC_${floor}:" >&2
		"${objdump}" -T "${bin}" | grep -E 'GLIBC_[0-9.]+' | awk -v f="${floor}" '{
			v = $0; sub(/.*GLIBC_/, "", v); sub(/[ )].*/, "", v)
			split(v, a, "."); split(f, b, ".")
			if (a[1] > b[1] || (a[1] == b[1] && a[2] > b[2])) print "  " $NF " GLIBC_" v
		}' >&2
		fail "${arch}: gpu-bootstrap needs GLIBC_${highest}, above the floor GLIBC_${floor}; bind the symbols above in scripts/release/glibc-floor/glibc_floor.h"
	fi
	ok "${arch}: highest glibc symbol version GLIBC_${highest} (floor ${floor})"
}
check_floor amd64 objdump "${work}/amd64/gpu-bootstrap"
check_floor arm64 aarch64-linux-gnu-objdump "${work}/arm64/gpu-bootstrap"

# --- 3 and 4: the binaries run -------------------------------------------
# A fixture root: a containerd config and the NVIDIA runtime binary, as an
# image with the toolkit installed has them; the config asks for the nvidia
# runtime as containerd's default.
make_fixture() {
	local dir="$1"
	mkdir -p "${dir}/usr/bin" "${dir}/etc/containerd"
	printf '#!/bin/sh\n' >"${dir}/usr/bin/nvidia-container-runtime"
	chmod 0755 "${dir}/usr/bin/nvidia-container-runtime"
	printf 'version = 2\n' >"${dir}/etc/containerd/config.toml"
	printf 'runtime:\n  engine: containerd\n  set_as_default: true\n' >"${dir}/gpu-bootstrap.yaml"
}

# exercise LABEL RUN... : RUN is the command prefix that runs the binary
# (qemu, chroot); FIXTURE and CONFIG are paths as that binary sees them.
exercise() {
	local label="$1" fixture="$2" config="$3"
	shift 3
	local out code
	out="$("$@" version 2>&1)" || fail "${label}: version failed:\n${out}"
	[[ "${out}" == "gpu-bootstrap ${version}" ]] || fail "${label}: version printed '${out}', want 'gpu-bootstrap ${version}'"

	code=0
	out="$("$@" inventory 2>&1)" || code=$?
	((code == 0)) || fail "${label}: inventory exit ${code}:\n${out}"
	grep -q 'no NVIDIA driver loaded (libnvidia-ml.so.1 not found)' <<<"${out}" ||
		fail "${label}: inventory does not say the driver is missing (dlopen of libnvidia-ml.so.1):\n${out}"

	code=0
	out="$("$@" plan --config "${config}" --root "${fixture}" 2>&1)" || code=$?
	((code == 2)) || fail "${label}: plan on the fixture root: exit ${code}, want 2 (changes):\n${out}"
	grep -q 'add the nvidia runtime' <<<"${out}" || fail "${label}: plan does not add the nvidia runtime:\n${out}"

	code=0
	out="$("$@" apply --skip-verify --config "${config}" --root "${fixture}" 2>&1)" || code=$?
	((code == 0)) || fail "${label}: apply on the fixture root: exit ${code}:\n${out}"

	code=0
	out="$("$@" plan --config "${config}" --root "${fixture}" 2>&1)" || code=$?
	((code == 0)) || fail "${label}: plan after apply: exit ${code}, want 0 (nothing to do):\n${out}"
}

# 3. arm64 under qemu-user, against Debian 12's arm64 glibc (libc6-arm64-cross).
make_fixture "${work}/fixture-arm64"
exercise "arm64 under qemu-user" "${work}/fixture-arm64" "${work}/fixture-arm64/gpu-bootstrap.yaml" \
	qemu-aarch64-static -L /usr/aarch64-linux-gnu "${work}/arm64/gpu-bootstrap"
grep -q 'BinaryName = "/usr/bin/nvidia-container-runtime"' "${work}/fixture-arm64/etc/containerd/config.toml" ||
	fail "arm64: apply did not write the nvidia runtime into the fixture's containerd config"
ok "arm64 under qemu-aarch64-static: version, inventory, plan (2), apply, plan (0) on a fixture root"

# 4. amd64 in a Debian 11 root, under chroot.
testbed() { go run ./cmd/gpu-testbed "$@"; }
bullseye="${work}/bullseye"
testbed rootfs --suite bullseye --dir "${bullseye}" >/dev/null || fail "could not make a Debian 11 root (gpu-testbed rootfs --suite bullseye); needs debootstrap and, the first time, the machine's Debian mirror (its apt sources, or set GPU_TESTBED_DEBIAN_MIRROR)"
glibc="$(chroot "${bullseye}" dpkg-query -W -f '${Version}' libc6)"
[[ "${glibc}" == 2.31-* ]] || fail "the bullseye root has libc6 ${glibc}, want 2.31"
install -m 0755 "${work}/amd64/gpu-bootstrap" "${bullseye}/usr/local/bin/gpu-bootstrap"
make_fixture "${bullseye}/fixture"
exercise "amd64 in Debian 11 (glibc ${glibc})" /fixture /fixture/gpu-bootstrap.yaml \
	chroot "${bullseye}" /usr/local/bin/gpu-bootstrap
ok "amd64 in a Debian 11 root (libc6 ${glibc}): version, inventory, plan (2), apply, plan (0)"

# 4a. arm64 in a Debian 11 arm64 root, under chroot: the kernel hands the
# root's arm64 programs to qemu-user (binfmt_misc, which gpu-testbed rootfs
# registers), so the root's own arm64 dynamic linker and glibc 2.31 load it.
bullseye_arm64="${work}/bullseye-arm64"
testbed rootfs --suite bullseye --arch arm64 --dir "${bullseye_arm64}" >/dev/null ||
	fail "could not make a Debian 11 arm64 root (gpu-testbed rootfs --suite bullseye --arch arm64); needs debootstrap, qemu-user-static and, the first time, the machine's Debian mirror (its apt sources, or set GPU_TESTBED_DEBIAN_MIRROR)"
glibc_arm64="$(chroot "${bullseye_arm64}" dpkg-query -W -f '${Version}' libc6)"
[[ "${glibc_arm64}" == 2.31-* ]] || fail "the bullseye arm64 root has libc6 ${glibc_arm64}, want 2.31"
install -m 0755 "${work}/arm64/gpu-bootstrap" "${bullseye_arm64}/usr/local/bin/gpu-bootstrap"
make_fixture "${bullseye_arm64}/fixture"
exercise "arm64 in Debian 11 arm64 (glibc ${glibc_arm64})" /fixture /fixture/gpu-bootstrap.yaml \
	chroot "${bullseye_arm64}" /usr/local/bin/gpu-bootstrap
ok "arm64 in a Debian 11 arm64 root under qemu-user (libc6 ${glibc_arm64}): version, inventory, plan (2), apply, plan (0)"

# 4b. The start file itself: a C program with a constructor, linked as the
# release is, must run its constructor exactly once with main's argc on the
# old glibc (which runs only the init function it is handed) and on the new
# one (which calls that function instead of running constructors itself).
bash scripts/release/glibc-floor/build-probe.sh amd64 "${bullseye}/usr/local/bin/ctor-probe"
bash scripts/release/glibc-floor/build-probe.sh arm64 "${work}/ctor-probe-arm64"
out="$(chroot "${bullseye}" /usr/local/bin/ctor-probe a b 2>&1)" || fail "start file, amd64 on glibc ${glibc}: ${out}"
ok "start file, amd64 on glibc ${glibc}: ${out}"
out="$("${bullseye}/usr/local/bin/ctor-probe" a b 2>&1)" || fail "start file, amd64 on this machine's glibc: ${out}"
ok "start file, amd64 on this machine's glibc: ${out}"
install -m 0755 "${work}/ctor-probe-arm64" "${bullseye_arm64}/usr/local/bin/ctor-probe"
out="$(chroot "${bullseye_arm64}" /usr/local/bin/ctor-probe a b 2>&1)" || fail "start file, arm64 on glibc ${glibc_arm64}: ${out}"
ok "start file, arm64 on glibc ${glibc_arm64}: ${out}"
out="$(qemu-aarch64-static -L /usr/aarch64-linux-gnu "${work}/ctor-probe-arm64" a b 2>&1)" || fail "start file, arm64 on Debian 12's glibc under qemu-user: ${out}"
ok "start file, arm64 on Debian 12's glibc under qemu-user: ${out}"

# --- 5. the .deb with dpkg in a Debian 12 root ---------------------------
deb="$(cd "${dist}" && ls gpu-bootstrap_*_amd64.deb | head -n1)"
bookworm="${work}/bookworm"
testbed rootfs --suite bookworm --dir "${bookworm}" >/dev/null || fail "could not make a Debian 12 root (gpu-testbed rootfs --suite bookworm)"
cp "${dist}/${deb}" "${bookworm}/tmp/${deb}"
in_bookworm() { chroot "${bookworm}" "$@"; }
in_bookworm dpkg -i "/tmp/${deb}" >"${work}/dpkg.out" 2>&1 || fail "dpkg -i ${deb}:\n$(cat "${work}/dpkg.out")"
[[ "$(in_bookworm dpkg-query -W -f '${Status}' gpu-bootstrap)" == "install ok installed" ]] || fail "dpkg does not list gpu-bootstrap as installed"
out="$(in_bookworm /usr/bin/gpu-bootstrap version)" || fail "/usr/bin/gpu-bootstrap from the .deb does not run"
[[ "${out}" == "gpu-bootstrap ${version}" ]] || fail ".deb: version printed '${out}'"
in_bookworm dpkg-query -W -f '${Conffiles}\n' gpu-bootstrap | grep -q '^ /etc/gpu-bootstrap/config.yaml ' ||
	fail ".deb: /etc/gpu-bootstrap/config.yaml is not a conffile"
metrics_unit="usr/lib/systemd/system/gpu-bootstrap-metrics.service"
cmp -s "${bookworm}/${metrics_unit}" examples/bootstrap/metrics/gpu-bootstrap-metrics.service ||
	fail ".deb: /${metrics_unit} is missing or is not examples/bootstrap/metrics/gpu-bootstrap-metrics.service"
# The unit names its command bare (systemd looks it up in /usr/local/bin,
# /usr/bin, ...); the host's systemd checks the unit with that command
# pointed at the root's binary (the minimal root has no systemd of its own).
sed "s#^ExecStart=gpu-bootstrap #ExecStart=${bookworm}/usr/bin/gpu-bootstrap #" "${bookworm}/${metrics_unit}" >"${work}/gpu-bootstrap-metrics.service"
grep -q "^ExecStart=${bookworm}/usr/bin/gpu-bootstrap metrics " "${work}/gpu-bootstrap-metrics.service" || fail ".deb: /${metrics_unit}: ExecStart does not run gpu-bootstrap metrics"
out="$(systemd-analyze verify "${work}/gpu-bootstrap-metrics.service" 2>&1)" || fail ".deb: systemd-analyze verify /${metrics_unit}:\n${out}"
# (cmd/gpu-bootstrap's TestExampleConfigsAreValid validates the shipped config.)
echo "# edited by check-release" >>"${bookworm}/etc/gpu-bootstrap/config.yaml"
in_bookworm dpkg -i "/tmp/${deb}" >"${work}/dpkg.out" 2>&1 || fail "dpkg -i ${deb} (reinstall):\n$(cat "${work}/dpkg.out")"
grep -q '^# edited by check-release$' "${bookworm}/etc/gpu-bootstrap/config.yaml" || fail ".deb: reinstalling replaced the edited /etc/gpu-bootstrap/config.yaml"
in_bookworm dpkg -r gpu-bootstrap >"${work}/dpkg.out" 2>&1 || fail "dpkg -r gpu-bootstrap:\n$(cat "${work}/dpkg.out")"
[[ ! -e "${bookworm}/usr/bin/gpu-bootstrap" ]] || fail ".deb: dpkg -r left /usr/bin/gpu-bootstrap"
[[ ! -e "${bookworm}/${metrics_unit}" ]] || fail ".deb: dpkg -r left /${metrics_unit}"
grep -q '^# edited by check-release$' "${bookworm}/etc/gpu-bootstrap/config.yaml" || fail ".deb: dpkg -r removed the edited config (a conffile stays until purge)"
in_bookworm dpkg -P gpu-bootstrap >"${work}/dpkg.out" 2>&1 || fail "dpkg -P gpu-bootstrap:\n$(cat "${work}/dpkg.out")"
[[ ! -e "${bookworm}/etc/gpu-bootstrap/config.yaml" ]] || fail ".deb: dpkg -P left /etc/gpu-bootstrap/config.yaml"
ok "${deb} in a Debian 12 root: installs, runs, metrics unit verified by systemd-analyze, conffile kept on reinstall and remove, purged with -P"

# --- 6. the .rpm files with rpm --root -----------------------------------
for arch in amd64 arm64; do
	rpmfile="$(cd "${dist}" && ls gpu-bootstrap-*."$(rpmarch "${arch}")".rpm | head -n1)"
	r="${work}/rpmroot-${arch}"
	mkdir -p "${r}"
	rpm --root "${r}" --initdb
	# --nodeps: the empty root has no glibc package; --ignorearch for arm64.
	rpm --root "${r}" -i --nodeps --ignorearch "${dist}/${rpmfile}" >"${work}/rpm.out" 2>&1 || fail "rpm -i ${rpmfile}:\n$(cat "${work}/rpm.out")"
	[[ -x "${r}/usr/bin/gpu-bootstrap" ]] || fail "${rpmfile}: no /usr/bin/gpu-bootstrap"
	cmp -s "${r}/usr/bin/gpu-bootstrap" "${work}/${arch}/gpu-bootstrap" || fail "${rpmfile}: /usr/bin/gpu-bootstrap differs from the tar.gz's binary"
	cmp -s "${r}/usr/lib/systemd/system/gpu-bootstrap-metrics.service" examples/bootstrap/metrics/gpu-bootstrap-metrics.service ||
		fail "${rpmfile}: /usr/lib/systemd/system/gpu-bootstrap-metrics.service is missing or differs from the example"
	[[ "$(rpm -qp --qf '%{ARCH}' "${dist}/${rpmfile}" 2>/dev/null)" == "$(rpmarch "${arch}")" ]] || fail "${rpmfile}: wrong ARCH"
	# rpm's --configfiles lists %config files; %config(noreplace) sets the
	# RPMFILE_NOREPLACE bit (16) in FILEFLAGS (rpm's lib/rpmfiles.h).
	flags="$(rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS}\n]' "${dist}/${rpmfile}" 2>/dev/null | sed -n 's|^/etc/gpu-bootstrap/config.yaml ||p')"
	[[ -n "${flags}" ]] && (((flags & 1) && (flags & 16))) || fail "${rpmfile}: /etc/gpu-bootstrap/config.yaml is not %config(noreplace) (FILEFLAGS ${flags:-none})"
	echo "# edited by check-release" >>"${r}/etc/gpu-bootstrap/config.yaml"
	rpm --root "${r}" -U --replacepkgs --nodeps --ignorearch "${dist}/${rpmfile}" >"${work}/rpm.out" 2>&1 || fail "rpm -U --replacepkgs ${rpmfile}:\n$(cat "${work}/rpm.out")"
	grep -q '^# edited by check-release$' "${r}/etc/gpu-bootstrap/config.yaml" || fail "${rpmfile}: reinstalling replaced the edited config"
	ok "${rpmfile}: rpm --root installs /usr/bin/gpu-bootstrap, the metrics unit and a %config(noreplace) config kept on reinstall"
done

echo "check-release: all checks passed for gpu-bootstrap ${version} in ${dist}"
