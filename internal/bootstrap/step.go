package bootstrap

import (
	"context"
	"io"
)

// Step is one part of the desired state. Plan only reads the host; it
// returns nothing when the host already matches, which is what makes a second
// apply a no-op.
type Step interface {
	Name() string
	Plan(ctx context.Context, h *Host) ([]Change, error)
}

// Change is one thing apply does: its ops, run in order; the first failure
// stops the change. A change that only writes one file is shown as that
// file (File).
type Change struct {
	// Summary says what changes and why, in one line: "add the nvidia
	// runtime to /etc/containerd/config.toml".
	Summary string
	Ops     []Op
	// Undo runs when an op fails after earlier ops of the change have
	// run: it puts back what they changed (the previous driver lock), so
	// a failed change never leaves the host half switched. Each undo op
	// must be harmless when what it undoes never happened. Apply reports
	// what it restored and what it could not.
	Undo []Op
	// Restart names a service that must restart before the change takes
	// effect ("containerd"). Apply restarts it with --restart-runtime and
	// says so otherwise.
	Restart string
	// Note is said after the change is applied: "takes effect after the
	// GPU is reset or the machine reboots".
	Note string
	// Reboot says the change only takes effect after the machine reboots
	// (a driver replacing the loaded one). Apply then reports
	// Report.RebootRequired and gpu-bootstrap skips the health check, which
	// could only fail until the reboot.
	Reboot bool
}

// File is the file the change writes when writing it is all the change
// does: the plan shows its diff, --dry-run the whole file, --json its path
// and diff. nil for any other change.
func (c Change) File() *FileChange {
	if len(c.Ops) == 1 && len(c.Undo) == 0 {
		if op, ok := c.Ops[0].(FileOp); ok {
			return op.File
		}
	}
	return nil
}

// Action is the GPU action when changing GPU state through NVML is all the
// change does; nil for any other change.
func (c Change) Action() ActionOp {
	if len(c.Ops) == 1 {
		if op, ok := c.Ops[0].(ActionOp); ok {
			return op
		}
	}
	return nil
}

// StepPlan is the plan of one step.
type StepPlan struct {
	Step    string
	Changes []Change
	// Warnings and Notes are what the step said through Host.Warn and
	// Host.Note while planning.
	Warnings []string
	Notes    []string
}

// Plan is the changes of every step, in order.
type Plan []StepPlan

// Empty reports whether the host already matches the desired state.
func (p Plan) Empty() bool {
	for _, s := range p {
		if len(s.Changes) > 0 {
			return false
		}
	}
	return true
}

// Count is the number of changes.
func (p Plan) Count() int {
	n := 0
	for _, s := range p {
		n += len(s.Changes)
	}
	return n
}

// MakePlan plans every step against the host as it is. A step planned after
// one with pending changes sees Host.Pending(thatStep) == true. On an error
// the plan so far is returned, with the failing step's warnings and notes
// when it gave any (they can explain the error).
func MakePlan(ctx context.Context, h *Host, steps []Step) (Plan, error) {
	defer h.beginPlanning(true)()
	plan := make(Plan, 0, len(steps))
	for _, step := range steps {
		changes, said, err := h.planStep(ctx, step)
		if err != nil {
			if !said.empty() {
				plan = append(plan, StepPlan{Step: step.Name(), Warnings: said.warnings, Notes: said.notes})
			}
			return plan, err
		}
		plan = append(plan, StepPlan{Step: step.Name(), Changes: changes, Warnings: said.warnings, Notes: said.notes})
	}
	return plan, nil
}

// StepError is a step that could not plan or apply.
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string { return e.Step + ": " + e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// ApplyOptions are the switches of `gpu-bootstrap apply`.
type ApplyOptions struct {
	// DryRun prints what would be written and run, and changes nothing.
	DryRun bool
	// RestartRuntime restarts the services changes name (systemctl restart).
	RestartRuntime bool
	// Out receives the progress and the final summary.
	Out io.Writer
}
