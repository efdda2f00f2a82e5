package nvrepo

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// portLockPath is the machine-wide lock that serializes test processes
// that serve on port 443. /run/lock is the FHS place for such locks; its
// absence (some containers) falls back to the testbed cache.
func portLockPath() (string, error) {
	if info, err := os.Stat("/run/lock"); err == nil && info.IsDir() {
		return "/run/lock/gpu-testbed-nvrepo-443.lock", nil
	}
	cache, err := testbed.CacheRoot()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(cache, "nvrepo-443.lock"), nil
}

// lockPort waits for the port-443 lock and keeps it for the life of the
// process: the kernel releases a flock(2) when its holder exits, however
// it exits, so a killed test never leaves the port locked.
func lockPort() (*os.File, error) {
	path, err := portLockPath()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("nvrepo: opening the port lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("nvrepo: locking %s: %w", path, err)
	}
	return f, nil
}
