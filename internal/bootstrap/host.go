package bootstrap

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// Host is the machine (or image root) the bootstrap reads and changes.
type Host struct {
	// Root prefixes every file path: "/" on a node, a mounted image or a
	// test's temporary directory otherwise.
	Root string
	// GPUs reads and changes GPU state. It reports a missing driver as a
	// state (Snapshot().Driver.Loaded == false).
	GPUs nvml.Library
	// Runner runs package managers, systemctl and friends.
	Runner Runner
	// Getenv reads the environment (NVIDIA_VISIBLE_DEVICES for check).
	Getenv func(string) string
	// Now stamps backups.
	Now func() time.Time

	// pending names the steps planned earlier in this run that still have
	// changes to make, so a later step can plan "after the driver is
	// installed" instead of failing on a driver that is not there yet.
	pending map[string]bool
}

// Path maps an absolute path on the target to the path this process opens.
func (h *Host) Path(path string) string {
	if h.Root == "" || h.Root == "/" {
		return filepath.Clean(path)
	}
	return filepath.Join(h.Root, path)
}

// ReadFile reads a target file; a missing file is (nil, false, nil).
func (h *Host) ReadFile(path string) (data []byte, exists bool, err error) {
	data, err = os.ReadFile(h.Path(path))
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// Exists reports whether a target path exists.
func (h *Host) Exists(path string) bool {
	_, err := os.Stat(h.Path(path))
	return err == nil
}

// Run runs a command on the target (see Command.Root).
func (h *Host) Run(ctx context.Context, name string, args ...string) (Output, error) {
	return h.Runner.Run(ctx, Command{Root: h.Root, Name: name, Args: args})
}

// Pending reports whether an earlier step of this run has changes not yet
// applied (true only while planning).
func (h *Host) Pending(step string) bool {
	return h.pending[step]
}

func (h *Host) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Host) getenv(key string) string {
	if h.Getenv != nil {
		return h.Getenv(key)
	}
	return os.Getenv(key)
}
