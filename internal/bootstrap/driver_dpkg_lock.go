package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// dpkgFrontendLock is the lock apt and dpkg take before changing packages
// (dpkg(1) "--lock-frontend"; apt since 1.7). They take it with fcntl(2)
// record locks, so F_GETLK tells who holds it.
const dpkgFrontendLock = "/var/lib/dpkg/lock-frontend"

// checkDpkgLock fails when another process holds dpkg's frontend lock, so a
// change that is several apt commands stops before the first of them
// rather than half way (apt-get would fail on it only at its own turn).
func checkDpkgLock(_ context.Context, h *Host) error {
	f, err := os.OpenFile(h.Path(dpkgFrontendLock), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening %s: %w", dpkgFrontendLock, err)
	}
	defer f.Close()
	lock := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lock); err != nil {
		return fmt.Errorf("checking %s: %w", dpkgFrontendLock, err)
	}
	if lock.Type != syscall.F_UNLCK {
		return fmt.Errorf("%s is held by process %d: another apt or dpkg is running in %s; wait for it to finish (or stop it) and run apply again — nothing was changed by this change", dpkgFrontendLock, lock.Pid, rootName(h))
	}
	return nil
}
