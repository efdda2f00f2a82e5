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

// Change is one thing apply does. Exactly one of File, Commands, Ops and
// Action is set.
type Change struct {
	// Summary says what changes and why, in one line: "add the nvidia
	// runtime to /etc/containerd/config.toml".
	Summary string
	// File is written atomically, with a backup of the old content.
	File *FileChange
	// Commands run in order; the first failure stops the apply.
	Commands []Command
	// Ops run in order, like Commands, for a change that also writes or
	// removes files or checks the host between its commands (the driver's
	// branch lock and stack move, apply_ops.go).
	Ops []Op
	// Undo runs when an op fails after earlier ops of the change have
	// run: it puts back what they changed (the previous driver lock), so
	// a failed change never leaves the host half switched. Each undo op
	// must be harmless when what it undoes never happened. Apply reports
	// what it restored and what it could not.
	Undo []Op
	// Action changes GPU state through NVML.
	Action func(ctx context.Context, h *Host) error
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

// StepPlan is the plan of one step.
type StepPlan struct {
	Step    string
	Changes []Change
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
// one with pending changes sees Host.Pending(thatStep) == true.
func MakePlan(ctx context.Context, h *Host, steps []Step) (Plan, error) {
	defer h.beginPlanning(true)()
	plan := make(Plan, 0, len(steps))
	for _, step := range steps {
		changes, err := h.planStep(ctx, step)
		if err != nil {
			return plan, err
		}
		plan = append(plan, StepPlan{Step: step.Name(), Changes: changes})
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
