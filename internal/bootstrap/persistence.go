package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// The persistence step keeps every GPU in persistence mode, now and after
// reboots:
//
//   - now: each GPU whose snapshot says persistence mode is off gets
//     SetPersistenceMode through NVML (a GPU that does not report the
//     mode, PersistenceMode == nil, does not support it and is skipped);
//   - at every boot: nvidia-persistenced, enabled with systemctl, turns it
//     on when the driver loads. Where the packaged unit starts the daemon
//     with --no-persistence-mode (Ubuntu), a drop-in swaps the flag
//     (persistence_unit.go). A loaded driver without the unit (a runfile
//     install, a driver container) still gets persistence mode now, with a
//     note that it may not survive a reboot; no driver and no unit, with no
//     driver step to install them, is an error.
//
// Without a loaded driver there is nothing to set now. When the driver step
// has changes pending, the plan holds one change that sets persistence mode
// once the driver is there (`apply` plans each step right before applying
// it, so it then sees the GPUs); when no driver is coming, the service is
// what makes persistence mode happen at the next boot, and the plan says
// nothing about GPUs, so a second apply on an image stays empty.
//
// systemctl: on the running machine `systemctl is-enabled` and `systemctl
// enable --now` (--now only once the driver is loaded: the daemon exits
// without one). For an image (Host.Root not "/") systemctl's own offline
// mode, `systemctl --root=<root>`, which works on the unit files without a
// running systemd; those commands run on the build host, so their
// Command.Root is "/" rather than a chroot.

type persistenceStep struct{}

func newPersistenceStep() Step { return persistenceStep{} }

func (persistenceStep) Name() string { return "persistence" }

func (s persistenceStep) Plan(ctx context.Context, h *Host) ([]Change, error) {
	snap, err := h.Snapshot()
	if err != nil {
		return nil, err
	}
	driverPending := h.Pending("driver")

	var changes []Change
	missingUnit := ""
	svc, err := readPersistencedService(h)
	if err != nil {
		return nil, err
	}
	switch {
	case svc == nil && driverPending:
		changes = append(changes, Change{
			Summary: "enable nvidia-persistenced (installed by the driver step) so persistence mode comes back at every boot",
			Ops:     commandOps(systemctlCommand(h, "enable", "nvidia-persistenced")),
		})
	case svc == nil && !snap.Driver.Loaded:
		return nil, fmt.Errorf("%s is not installed under %s and no NVIDIA driver is loaded, so nothing can turn persistence mode on: configure the driver section (its packages bring nvidia-persistenced) or install the driver first", persistencedUnit, rootName(h))
	case svc == nil:
		// A driver without the unit: a runfile install, or a driver
		// container that runs its own nvidia-persistenced. Persistence mode
		// is set now; the notes say it may not survive a reboot.
		missingUnit = fmt.Sprintf("%s is not installed under %s: unless something else sets it (a driver container's nvidia-persistenced, the runfile's sample unit), persistence mode is off again after a reboot", persistencedUnit, rootName(h))
	default:
		serviceChanges, err := s.planService(ctx, h, svc, snap.Driver.Loaded)
		if err != nil {
			return nil, err
		}
		changes = append(changes, serviceChanges...)
	}

	switch {
	case snap.Driver.Loaded:
		for _, dev := range snap.Devices {
			if dev.PersistenceMode == nil || *dev.PersistenceMode {
				continue
			}
			change := setPersistenceChange(dev)
			change.Note = missingUnit
			changes = append(changes, change)
		}
	case driverPending:
		changes = append(changes, Change{
			Summary: "turn persistence mode on for every GPU once the driver from the driver step is loaded",
			Ops:     []Op{ActionOp(setPersistenceWhenLoaded)},
			Note:    "if the NVIDIA driver is not loaded yet (it loads at the next boot), nvidia-persistenced turns persistence mode on when it starts",
		})
	}
	return changes, nil
}

// planService makes nvidia-persistenced keep persistence mode on and start
// at boot.
func (s persistenceStep) planService(ctx context.Context, h *Host, svc *persistencedService, driverLoaded bool) ([]Change, error) {
	var changes []Change
	if disablesPersistence(svc.ExecStart) {
		if path.Base(svc.ExecStartFrom) > path.Base(persistenceDropInPath) {
			return nil, fmt.Errorf("%s starts nvidia-persistenced with --no-persistence-mode and is applied after gpu-bootstrap's drop-in %s: remove the flag from it", svc.ExecStartFrom, persistenceDropInPath)
		}
		want := persistenceDropIn(svc)
		if string(svc.DropInOld) != string(want) {
			changes = append(changes, Change{
				Summary: fmt.Sprintf("make nvidia-persistenced keep persistence mode on: %s starts it with --no-persistence-mode", svc.ExecStartFrom),
				Ops:     []Op{FileOp{File: &FileChange{Path: persistenceDropInPath, Old: svc.DropInOld, New: want, Mode: 0o644}}},
			})
			if h.live() {
				changes = append(changes, Change{
					Summary: "reload systemd and restart nvidia-persistenced if it runs, so the drop-in takes effect",
					Ops: commandOps(
						systemctlCommand(h, "daemon-reload"),
						systemctlCommand(h, "try-restart", "nvidia-persistenced"),
					),
				})
			}
		}
	}

	enabled, err := persistencedEnabled(ctx, h)
	if err != nil {
		return nil, err
	}
	if !enabled {
		args := []string{"enable", "nvidia-persistenced"}
		summary := "enable nvidia-persistenced so persistence mode comes back at every boot"
		if h.live() && driverLoaded {
			args = []string{"enable", "--now", "nvidia-persistenced"}
			summary = "enable and start nvidia-persistenced so persistence mode comes back at every boot"
		}
		changes = append(changes, Change{Summary: summary, Ops: commandOps(systemctlCommand(h, args...))})
	}
	return changes, nil
}

// persistencedEnabled asks systemctl is-enabled. Exit status 0 covers
// "enabled" and also "static" and "indirect": a unit without an [Install]
// section that something else starts, as Ubuntu's udev rule starts
// nvidia-persistenced when the nvidia driver binds a GPU. Anything else
// ("disabled", "masked", …) exits non-zero.
func persistencedEnabled(ctx context.Context, h *Host) (bool, error) {
	_, err := h.Runner.Run(ctx, systemctlCommand(h, "is-enabled", "nvidia-persistenced"))
	var cmdErr *CommandError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &cmdErr):
		return false, nil
	default:
		return false, fmt.Errorf("asking systemctl whether nvidia-persistenced is enabled: %w", err)
	}
}

// systemctlCommand runs systemctl on the running machine, or in its offline
// mode on the unit files of an image (systemctl --root, run from the build
// host, hence Command.Root "/").
func systemctlCommand(h *Host, args ...string) Command {
	if h.live() {
		return Command{Root: "/", Name: "systemctl", Args: args}
	}
	return Command{Root: "/", Name: "systemctl", Args: append([]string{"--root=" + h.Root}, args...)}
}

// setPersistenceChange turns persistence mode on for one GPU.
func setPersistenceChange(dev nvml.Device) Change {
	uuid := dev.UUID
	return Change{
		Summary: fmt.Sprintf("turn persistence mode on for GPU %d (%s, %s)", dev.Index, dev.Name, uuid),
		Ops: []Op{ActionOp(func(_ context.Context, h *Host) error {
			if err := h.GPUs.SetPersistenceMode(uuid, true); err != nil {
				return fmt.Errorf("turning persistence mode on for GPU %s: %w", uuid, err)
			}
			return nil
		})},
	}
}

// setPersistenceWhenLoaded is the action planned before the driver exists:
// it reads the GPUs again and turns persistence mode on where it is off. No
// driver yet is not an error: nvidia-persistenced takes over at boot.
func setPersistenceWhenLoaded(ctx context.Context, h *Host) error {
	snap, err := h.Snapshot()
	if err != nil {
		return err
	}
	if !snap.Driver.Loaded {
		return nil
	}
	for _, dev := range snap.Devices {
		if dev.PersistenceMode == nil || *dev.PersistenceMode {
			continue
		}
		if err := setPersistenceChange(dev).Action()(ctx, h); err != nil {
			return err
		}
	}
	return nil
}
