package debroot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// Tarball returns the cached tarball of the root, building it the first time (file lock; a half-built
// cache entry is never used). Cache: <testbed.CacheRoot()>/roots/<suite>-<arch>-<variant>-<hash of includes>.tar
func Tarball(ctx context.Context, spec Spec) (string, error) {
	spec, err := spec.normalized()
	if err != nil {
		return "", err
	}
	cache, err := testbed.CacheRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "roots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("debroot: creating the root cache: %w", err)
	}
	path := filepath.Join(dir, spec.key()+".tar")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}

	unlock, err := lockFile(filepath.Join(dir, spec.key()+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(path); err == nil { // another process built it while we waited
		return path, nil
	}
	// Work directories of this key left by a build that was killed: with
	// the lock held, no live process is using them.
	stale, _ := filepath.Glob(filepath.Join(dir, spec.key()+".build-*"))
	for _, s := range stale {
		removeTree(s)
	}
	if err := build(ctx, spec, path); err != nil {
		return "", fmt.Errorf("debroot: building the %s %s root (%s): %w", spec.Suite, spec.Arch, strings.Join(spec.Include, ","), err)
	}
	return path, nil
}

// lockFile takes an exclusive flock(2) on path, waiting for another
// holder; the kernel releases it if the process dies.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("debroot: opening the lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("debroot: locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// build runs debootstrap into a work directory next to path, prepares the
// root for offline tests, and renames its tarball into place.
func build(ctx context.Context, spec Spec, path string) error {
	for _, tool := range requiredTools(spec) {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed: %s", tool, installHint)
		}
	}
	mirror, err := mirrorFor(spec, os.Getenv(MirrorEnv), aptRoot)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp(filepath.Dir(path), spec.key()+".build-")
	if err != nil {
		return err
	}
	root := filepath.Join(work, "root")
	defer removeTree(work)
	logPath := path + ".log"
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "# mirror %s (from %s)\n", mirror.URI, mirror.From)

	args := []string{"--variant=" + spec.Variant, "--arch=" + spec.Arch}
	if len(spec.Include) > 0 {
		args = append(args, "--include="+strings.Join(spec.Include, ","))
	}
	if spec.foreign() {
		args = append(args, "--foreign")
	}
	args = append(args, spec.Suite, root, mirror.URI)
	if err := runLogged(ctx, log, logPath, "debootstrap", args...); err != nil {
		// The log's last lines no longer show the "# mirror" line: say
		// which mirror failed, and how to choose another, here.
		return fmt.Errorf("building from the mirror %s (from %s), which must serve %s for %s "+
			"(a partial mirror, of one suite or one architecture, fails here); to use another, set %s=<mirror URL> "+
			"or pass gpu-testbed rootfs --mirror <mirror URL>: %w",
			mirror.URI, mirror.From, spec.Suite, spec.Arch, MirrorEnv, err)
	}
	if spec.foreign() {
		if err := secondStage(ctx, spec, root, log, logPath); err != nil {
			return err
		}
	}
	if err := prepareOffline(root); err != nil {
		return err
	}
	tmp := filepath.Join(work, "root.tar")
	if err := runLogged(ctx, log, logPath, "tar", "--numeric-owner", "-cpf", tmp, "-C", root, "."); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// installHint is the Debian packages the package needs on the host.
const installHint = "install the Debian packages debootstrap and qemu-user-static (apt-get install debootstrap qemu-user-static) and run as root"

func requiredTools(spec Spec) []string {
	tools := []string{"debootstrap", "tar"}
	if spec.foreign() {
		tools = append(tools, "qemu-aarch64-static")
	}
	return tools
}

func hostArch() string { return runtime.GOARCH }

// runLogged runs a command with its output appended to log; on failure the
// error carries the log's last lines.
func runLogged(ctx context.Context, log *os.File, logPath, name string, args ...string) error {
	fmt.Fprintf(log, "+ %s %s\n", name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C.UTF-8")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w; last lines of %s:\n%s", name, err, logPath, tail(logPath, 15))
	}
	return nil
}

func tail(path string, lines int) string {
	data, _ := os.ReadFile(path)
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// removeTree removes a build directory without crossing into a file system
// debootstrap may have left mounted inside it (proc, sys): those are
// unmounted first.
func removeTree(dir string) {
	for _, m := range mountsUnder(dir) {
		_ = syscall.Unmount(m, syscall.MNT_DETACH)
	}
	_ = exec.Command("rm", "-rf", "--one-file-system", dir).Run()
}

// mountsUnder lists mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var found []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			found = append(found, fields[4])
		}
	}
	for i, j := 0, len(found)-1; i < j; i, j = i+1, j-1 {
		found[i], found[j] = found[j], found[i]
	}
	return found
}

var errNotRoot = errors.New("not running as root: " + installHint)
