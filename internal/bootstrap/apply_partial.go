package bootstrap

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// This file accounts for an apply that stopped part way: which changes were
// made, which were not, which steps never ran and which services still need
// a restart, so the operator knows the host's exact state.

// PartialApplyError is an apply that failed part way: what had been changed
// before the failure, and what was not. Every file write is atomic and a
// failed one leaves its file as it was, so the host is exactly in the state
// Applied describes.
type PartialApplyError struct {
	Err error
	// Applied are the changes made before the failure, "step: summary".
	Applied []string
	// PartlyApplied is what the failed change itself did before it failed,
	// one entry per command run or file written or removed ("ran chroot
	// /img apt-get purge -y nvidia-driver-pinning-580"): a change is
	// several commands, and the first of them may have changed the host.
	PartlyApplied []string
	// Undone is what the failed change's Undo put back after the failure
	// (the previous driver lock), and NotUndone what it could not, with why.
	Undone, NotUndone []string
	// NotApplied are the change that failed and the rest of its step.
	NotApplied []string
	// NotPlanned are the later steps, not planned or applied.
	NotPlanned []string
	// Restarts are the services the applied changes need restarted; the
	// run stopped before restarting them.
	Restarts []string
}

func (e *PartialApplyError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	list := func(title string, items []string) {
		if len(items) == 0 {
			fmt.Fprintf(&b, "\n  %s: none", title)
			return
		}
		fmt.Fprintf(&b, "\n  %s:", title)
		for _, item := range items {
			b.WriteString("\n    - " + item)
		}
	}
	list("changed before the failure", e.Applied)
	if len(e.NotApplied) > 0 {
		list("done by the failed change ("+e.NotApplied[0]+") before it failed", e.PartlyApplied)
	}
	if len(e.Undone) > 0 {
		list("put back after the failure", e.Undone)
	}
	if len(e.NotUndone) > 0 {
		list("could NOT be put back (the host keeps these until fixed by hand)", e.NotUndone)
	}
	list("not changed (the failed change and the rest of its step)", e.NotApplied)
	if len(e.NotPlanned) > 0 {
		fmt.Fprintf(&b, "\n  steps not run: %s", strings.Join(e.NotPlanned, ", "))
	}
	for _, service := range e.Restarts {
		fmt.Fprintf(&b, "\n  %s was not restarted for what was changed: systemctl restart %s", service, service)
	}
	b.WriteString("\n  fix the cause and run apply again: it plans from what is on the host now")
	return b.String()
}

func (e *PartialApplyError) Unwrap() error { return e.Err }

// partialApply builds the error of a run that stopped at changes[failed]
// of steps[stepIndex].
func partialApply(err error, applied []string, restarts map[string]bool, steps []Step, stepIndex int, changes []Change, failed int, progress changeProgress) error {
	step := steps[stepIndex].Name()
	var stepErr *StepError
	if errors.As(err, &stepErr) && stepErr.Step == step {
		err = stepErr.Err // a planning failure, already named by its step
	}
	e := &PartialApplyError{Err: err, Applied: applied, PartlyApplied: progress.done, Undone: progress.undone, NotUndone: progress.notUndone}
	for _, c := range changes[failed:] {
		e.NotApplied = append(e.NotApplied, step+": "+c.Summary)
	}
	for _, later := range steps[stepIndex+1:] {
		e.NotPlanned = append(e.NotPlanned, later.Name())
	}
	for service := range restarts {
		e.Restarts = append(e.Restarts, service)
	}
	sort.Strings(e.Restarts)
	return &StepError{Step: step, Err: e}
}
