package bootstrap

import (
	"context"
	"fmt"
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
	// planning is set during a pass that plans without applying anything
	// (see beginPlanning); snapshot is its one reading of the GPUs.
	planning bool
	snapshot *nvml.Snapshot
	// backedUp holds the backups made so far (target paths under
	// BackupDir), so a file changed twice in one run keeps its original.
	backedUp map[string]bool
	// warnings and notes collect what the step being planned said
	// through Warn and Note.
	warnings, notes []string
}

// Warn records something the operator should know about the step being
// planned that is not a change and does not stop the plan: a driver branch
// past its end of life, a config file another tool also writes. Plan and
// check show it under the step, apply shows it before the step's changes,
// and --json carries it. Repeated text is said once.
func (h *Host) Warn(format string, args ...any) {
	h.warnings = appendOnce(h.warnings, fmt.Sprintf(format, args...))
}

// Note records a fact about the step being planned that the operator
// should see even when nothing changes: which branch a moving name such as
// driver.branch "lts" stands for today, which CDI spec owns the devices.
// Shown like a warning, as "note:".
func (h *Host) Note(format string, args ...any) {
	h.notes = appendOnce(h.notes, fmt.Sprintf(format, args...))
}

// appendOnce appends msg unless list has it already.
func appendOnce(list []string, msg string) []string {
	for _, m := range list {
		if m == msg {
			return list
		}
	}
	return append(list, msg)
}

// Path maps an absolute path on the target to the path this process opens,
// resolved inside Root as a chroot would (see rootpath.go): links are
// followed within the root and ".." stops at it, so nothing outside Root is
// ever named. A path that cannot be resolved (a loop of links) maps to a
// name under Root that does not exist; ReadFile, Exists and writeFile report
// the real error. Use linkPath to Lstat or Readlink a link itself.
func (h *Host) Path(path string) string {
	resolved, _, err := h.resolvePath(path)
	if err != nil {
		return filepath.Join(h.Root, unresolvable, path)
	}
	return resolved
}

// live reports whether Host.Root is the running machine rather than an
// image being built or a test directory: only then are kernel modules
// loaded, services started and running engines asked.
func (h *Host) live() bool { return isLiveRoot(h.Root) }

// isLiveRoot reports whether a root is the running machine's ("" or "/").
func isLiveRoot(root string) bool { return root == "" || root == "/" }

// Snapshot reads the GPUs; a host without a GPU library has none. During a
// planning pass nothing changes the GPUs, so every step shares the pass's
// first reading instead of asking NVML again.
func (h *Host) Snapshot() (nvml.Snapshot, error) {
	if h.planning && h.snapshot != nil {
		return *h.snapshot, nil
	}
	if h.GPUs == nil {
		return nvml.Snapshot{Driver: nvml.Driver{Reason: "no GPU library"}}, nil
	}
	snap, err := h.GPUs.Snapshot()
	if err != nil {
		return snap, fmt.Errorf("reading the GPUs: %w", err)
	}
	if h.planning {
		h.snapshot = &snap
	}
	return snap, nil
}

// beginPlanning starts a pass that reads the host without changing it
// (MakePlan, a dry run, Verify): the GPUs are read once for the whole pass,
// and with trackPending each step's leftover changes are recorded for the
// steps after it (see Pending). The returned func ends the pass.
func (h *Host) beginPlanning(trackPending bool) (end func()) {
	pending := h.pending
	if trackPending {
		h.pending = map[string]bool{}
	}
	h.planning, h.snapshot = true, nil
	return func() { h.pending, h.planning, h.snapshot = pending, false, nil }
}

// planStep plans one step, recording whether it left changes when the pass
// tracks them; it also returns what the step said (Warn, Note), even
// with an error.
func (h *Host) planStep(ctx context.Context, step Step) ([]Change, stepMessages, error) {
	h.warnings, h.notes = nil, nil
	changes, err := step.Plan(ctx, h)
	said := stepMessages{warnings: h.warnings, notes: h.notes}
	h.warnings, h.notes = nil, nil
	if err != nil {
		return nil, said, &StepError{Step: step.Name(), Err: err}
	}
	orderFileWrites(changes)
	h.noteSymlinks(changes)
	if h.pending != nil {
		h.pending[step.Name()] = len(changes) > 0
	}
	return changes, said, nil
}

// stepMessages are what a step said while planning (Warn, Note).
type stepMessages struct{ warnings, notes []string }

func (m stepMessages) empty() bool { return len(m.warnings) == 0 && len(m.notes) == 0 }

// ReadFile reads a target file, resolved inside Root (see Path); a missing
// file is (nil, false, nil), and anything there that is not a regular file
// (a directory, a pipe, a link to a device) is an error, except a link to
// /dev/null, which reads as empty.
func (h *Host) ReadFile(path string) (data []byte, exists bool, err error) {
	resolved, res, err := h.resolvePath(path)
	if err != nil {
		return nil, false, err
	}
	if info, statErr := os.Stat(resolved); statErr == nil {
		if err := requireRegular(path, res, info, false); err != nil {
			return nil, false, err
		}
		if isNullDevice(info) {
			return []byte{}, true, nil // masked: reads as empty, as from /dev/null
		}
	}
	data, err = os.ReadFile(resolved)
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
	resolved, _, err := h.resolvePath(path)
	if err != nil {
		return false
	}
	_, err = os.Stat(resolved)
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
