package bootstrap

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// This file holds what Apply and the plan do around each step's changes so
// that nothing is lost: the order of a step's file writes, the plan's word
// on symbolic links a write goes through, and the account of a run that
// stopped part way.

// orderFileWrites puts a step's new files before its edits of existing
// files, keeping every other change (commands, GPU actions) where it is and
// the order within each group. A drop-in nothing loads yet, or one the
// engine loads on its own, is complete before the main config that imports
// it or drops a setting it takes over is rewritten, so a process killed
// between the two writes leaves an engine config that loads: each file is
// replaced atomically (writeAtomic), and the engine sees either the old
// main file with an extra self-contained drop-in, or the new one with all
// it refers to.
func orderFileWrites(changes []Change) {
	var slots []int
	var files []Change
	for i, c := range changes {
		if c.File != nil {
			slots = append(slots, i)
			files = append(files, c)
		}
	}
	sort.SliceStable(files, func(a, b int) bool {
		return files[a].File.Created() && !files[b].File.Created()
	})
	for i, slot := range slots {
		changes[slot] = files[i]
	}
}

// noteSymlinks adds to the summary of each file change whose path goes
// through a symbolic link under the root which file is written in the end
// (the link's target, resolved inside the root; the link is kept).
func (h *Host) noteSymlinks(changes []Change) {
	if h.live() {
		return
	}
	for i := range changes {
		if changes[i].File == nil {
			continue
		}
		_, res, err := h.resolvePath(changes[i].File.Path)
		if err != nil {
			continue // apply reports it
		}
		if note := describeLinks(changes[i].File.Path, res); note != "" {
			changes[i].Summary += " (" + note + ")"
		}
	}
}

// PartialApplyError is an apply that failed part way: what had been changed
// before the failure, and what was not. Every file write is atomic and a
// failed one leaves its file as it was, so the host is exactly in the state
// Applied describes.
type PartialApplyError struct {
	Err error
	// Applied are the changes made before the failure, "step: summary".
	Applied []string
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
func partialApply(err error, applied []string, restarts map[string]bool, steps []Step, stepIndex int, changes []Change, failed int) error {
	step := steps[stepIndex].Name()
	var stepErr *StepError
	if errors.As(err, &stepErr) && stepErr.Step == step {
		err = stepErr.Err // a planning failure, already named by its step
	}
	e := &PartialApplyError{Err: err, Applied: applied}
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
