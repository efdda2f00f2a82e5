package debroot

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// Extract unpacks a fresh copy into dir (as root, keeping owners, modes and device nodes).
// For an arm64 root on an amd64 host it also makes sure the kernel runs
// the root's programs under qemu-user (binfmt.go).
func Extract(ctx context.Context, spec Spec, dir string) error {
	if _, err := spec.normalized(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("debroot: %w", errNotRoot)
	}
	tarball, err := Tarball(ctx, spec)
	if err != nil {
		return err
	}
	if spec, _ := spec.normalized(); spec.foreign() {
		// A cached root outlives the binfmt_misc entry its build registered
		// (a reboot clears it): its programs need it to run.
		if err := ensureAarch64Binfmt(); err != nil {
			return fmt.Errorf("debroot: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("debroot: creating %s: %w", dir, err)
	}
	out, err := exec.CommandContext(ctx, "tar", "--numeric-owner", "-xpf", tarball, "-C", dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("debroot: extracting %s into %s: %w: %s", tarball, dir, err, out)
	}
	return nil
}

// New is Extract into a t.TempDir() subdirectory; returns the root's path. Without root privileges or
// debootstrap it fails the test under GPU_TESTBED_REQUIRED=1, skips otherwise (message says what to install).
func New(t testing.TB, spec Spec) string {
	t.Helper()
	if err := prerequisites(spec); err != nil {
		if testbed.Required() {
			t.Fatalf("debroot: %v", err)
		}
		t.Skipf("debroot: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "root")
	if err := Extract(context.Background(), spec, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// prerequisites is what New needs of the host: root, and the tools that
// build the root.
func prerequisites(spec Spec) error {
	spec, err := spec.normalized()
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errNotRoot
	}
	for _, tool := range append(requiredTools(spec), "chroot") {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed: %s", tool, installHint)
		}
	}
	return nil
}
