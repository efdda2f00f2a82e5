package bootstrap

import (
	"context"
	"fmt"
	"path"
)

// afterDriverChange is the change a GPU-dependent step (cdi, gpu) plans
// while the driver step still has work to do: the step cannot know the GPUs
// yet, so the change says what will happen and, when applied, plans the step
// again and applies what that plan says.
//
// `gpu-bootstrap apply` plans each step right before applying it, so there
// the step is planned afresh after the driver step ran and this change is
// only what `plan` and `apply --dry-run` show. The action is the fallback
// for a caller that applies a plan made earlier.
func afterDriverChange(step Step, summary string) Change {
	return Change{
		Summary: summary,
		Ops: []Op{ActionOp(func(ctx context.Context, h *Host) error {
			changes, err := step.Plan(ctx, h)
			if err != nil {
				return err
			}
			backupRoot := path.Join(BackupDir, h.now().UTC().Format("20060102T150405Z"))
			for _, change := range changes {
				if change.Action() != nil && change.Summary == summary {
					// Still no driver: planning again would only defer again.
					return fmt.Errorf("%s: the NVIDIA driver is still not loaded; reboot or load the kernel module (modprobe nvidia) and run apply again", step.Name())
				}
				if _, err := applyChange(ctx, h, change, backupRoot); err != nil {
					return err
				}
			}
			return nil
		})},
	}
}
