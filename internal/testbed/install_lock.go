package testbed

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockBuild takes an exclusive flock(2) on path, so that two processes
// (two `go test` runs, `make test` beside `make demo`) never build the same
// cache directory at once; the kernel releases it when its holder exits,
// however it exits. When another process holds it, waiting is called
// before blocking (flock(2): LOCK_NB fails with EWOULDBLOCK).
func lockBuild(path string, waiting func()) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the build lock %s: %w", path, err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		waiting()
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
