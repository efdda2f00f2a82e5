package debroot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// A foreign root's second stage runs the root's own shell, dpkg and
// maintainer scripts. `chroot ROOT qemu-aarch64-static /bin/bash
// /debootstrap/debootstrap --second-stage` alone is not enough: qemu-user
// emulates that one process, and every arm64 program it executes goes to
// the kernel's execve, which fails with "Exec format error" unless
// binfmt_misc hands aarch64 ELF files to qemu. So the second stage needs an
// aarch64 binfmt_misc entry, which Debian's qemu-user-static ships as
// /usr/lib/binfmt.d/qemu-aarch64.conf for systemd-binfmt(8) to load at boot
// (binfmt.d(5): one line in the kernel's register format). Where no
// systemd loaded it (containers, CI machines started without systemd) we
// load that same line, mounting binfmt_misc first if needed
// (https://docs.kernel.org/admin-guide/binfmt-misc.html). Its flags
// include F: the kernel opens the interpreter when the entry is registered,
// so it works inside a chroot without a copy of qemu there; a copy is put
// in the root anyway at /usr/bin/qemu-aarch64-static, the path
// binfmt-support's registration (no F flag) looks up inside the chroot.

const (
	binfmtDir   = "/proc/sys/fs/binfmt_misc"
	binfmtEntry = binfmtDir + "/qemu-aarch64"
	binfmtConf  = "/usr/lib/binfmt.d/qemu-aarch64.conf"
	qemuStatic  = "/usr/bin/qemu-aarch64-static"
)

// ensureAarch64Binfmt makes sure the kernel runs aarch64 ELF binaries with
// qemu-user, registering Debian's entry if none is.
func ensureAarch64Binfmt() error {
	if enabled, err := binfmtEnabled(); err != nil || enabled {
		return err
	}
	if _, err := os.Stat(filepath.Join(binfmtDir, "register")); err != nil {
		if err := syscall.Mount("binfmt_misc", binfmtDir, "binfmt_misc", 0, ""); err != nil {
			return fmt.Errorf("mounting binfmt_misc on %s to run arm64 programs under qemu-user: %w", binfmtDir, err)
		}
	}
	line, err := os.ReadFile(binfmtConf)
	if err != nil {
		return fmt.Errorf("reading qemu-user-static's binfmt entry: %w (apt-get install qemu-user-static)", err)
	}
	register := strings.TrimSpace(string(line))
	err = os.WriteFile(filepath.Join(binfmtDir, "register"), []byte(register), 0)
	if err != nil && !errors.Is(err, syscall.EEXIST) { // EEXIST: another process registered it just now
		return fmt.Errorf("registering %s with binfmt_misc: %w", binfmtConf, err)
	}
	if enabled, err := binfmtEnabled(); err != nil || !enabled {
		return fmt.Errorf("the binfmt_misc entry %s is disabled: echo 1 > %s", binfmtEntry, binfmtEntry)
	}
	return nil
}

func binfmtEnabled() (bool, error) {
	data, err := os.ReadFile(binfmtEntry)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return strings.HasPrefix(string(data), "enabled"), nil
}

// secondStage finishes a --foreign root: it copies qemu-aarch64-static in
// and runs debootstrap's second stage inside the root.
func secondStage(ctx context.Context, spec Spec, root string, log *os.File, logPath string) error {
	if spec.Arch != "arm64" {
		return fmt.Errorf("a %s root cannot be made on a %s host: only arm64 roots are made under qemu-user", spec.Arch, hostArch())
	}
	if err := ensureAarch64Binfmt(); err != nil {
		return err
	}
	qemu, err := os.ReadFile(qemuStatic)
	if err != nil {
		return fmt.Errorf("reading %s: %w (apt-get install qemu-user-static)", qemuStatic, err)
	}
	if err := os.WriteFile(filepath.Join(root, qemuStatic), qemu, 0o755); err != nil {
		return err
	}
	if _, err := exec.LookPath("chroot"); err != nil {
		return err
	}
	return runLogged(ctx, log, logPath, "chroot", root, "/debootstrap/debootstrap", "--second-stage")
}
