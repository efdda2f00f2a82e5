package bootstrap

import (
	"context"
	"fmt"
	"io"
	"sort"
)

// Report is what an apply did.
type Report struct {
	Changes  int      // changes applied (or, with DryRun, that would be)
	Backups  []string // target paths of the backups of replaced files
	Restarts []string // services that need a restart (restarted with RestartRuntime)
	Notes    []string // what the operator should know: "MIG mode is pending a GPU reset"
	// Warnings are what steps said while planning (Host.Warn) and what
	// commands printed as warnings while succeeding ("W: …" of apt-get),
	// shown as they happen and again at the end.
	Warnings []string
	// Steps counts the commands run, files written and removed: a change
	// is several of them.
	Steps int
	// RebootRequired is set when an applied change takes effect only after
	// a reboot (see Change.Reboot).
	RebootRequired bool
}

// Apply brings the host to the desired state one step at a time: each step
// is planned right before it is applied, so it sees what earlier steps did
// (persistence mode is set on the GPUs of a driver installed a moment ago).
// With DryRun nothing is written or run; the files that would be written are
// printed in full.
func Apply(ctx context.Context, h *Host, steps []Step, opts ApplyOptions) (Report, error) {
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	var report Report
	backupRoot := h.backupRunDir(h.now())
	restarts := map[string]bool{}
	if opts.DryRun {
		// Nothing is applied, so the run is one planning pass.
		defer h.beginPlanning(true)()
	}
	var applied []string
	for stepIndex, step := range steps {
		changes, said, err := h.planStep(ctx, step)
		for _, n := range said.notes {
			fmt.Fprintf(out, "%s: note: %s\n", step.Name(), n)
		}
		for _, w := range said.warnings {
			fmt.Fprintf(out, "%s: warning: %s\n", step.Name(), w)
			report.Warnings = append(report.Warnings, step.Name()+": "+w)
		}
		if err != nil {
			if len(applied) > 0 {
				return report, partialApply(err, applied, restarts, steps, stepIndex, nil, 0, changeProgress{})
			}
			return report, err
		}
		if len(changes) == 0 {
			fmt.Fprintf(out, "%s: up to date\n", step.Name())
			continue
		}
		for i, change := range changes {
			report.Changes++
			if opts.DryRun {
				fmt.Fprintf(out, "%s: would %s\n", step.Name(), change.Summary)
				writeDryRunDetail(out, change)
			} else {
				fmt.Fprintf(out, "%s: %s\n", step.Name(), change.Summary)
				progress, err := runChange(ctx, h, change, backupRoot)
				report.Steps += len(progress.done)
				for _, w := range progress.warnings {
					fmt.Fprintf(out, "  warning: %s\n", w)
					report.Warnings = append(report.Warnings, step.Name()+": "+w)
				}
				if err != nil {
					report.Changes--
					return report, partialApply(err, applied, restarts, steps, stepIndex, changes, i, progress)
				}
				applied = append(applied, step.Name()+": "+change.Summary)
				if progress.backup != "" {
					report.Backups = append(report.Backups, progress.backup)
					fmt.Fprintf(out, "  backup of the old file: %s\n", progress.backup)
				}
			}
			if change.Restart != "" {
				restarts[change.Restart] = true
			}
			if change.Note != "" {
				report.Notes = append(report.Notes, change.Note)
			}
			report.RebootRequired = report.RebootRequired || change.Reboot
		}
	}
	for service := range restarts {
		report.Restarts = append(report.Restarts, service)
	}
	sort.Strings(report.Restarts)
	if err := restartServices(ctx, h, &report, opts, out); err != nil {
		return report, err
	}
	writeApplySummary(out, report, opts.DryRun)
	return report, nil
}

func restartServices(ctx context.Context, h *Host, report *Report, opts ApplyOptions, out io.Writer) error {
	for _, service := range report.Restarts {
		switch {
		case opts.DryRun:
			if opts.RestartRuntime {
				fmt.Fprintf(out, "would run: systemctl restart %s\n", service)
			}
		case opts.RestartRuntime:
			fmt.Fprintf(out, "restarting %s\n", service)
			if _, err := h.Run(ctx, "systemctl", "restart", service); err != nil {
				return &StepError{Step: "restart", Err: err}
			}
		default:
			fmt.Fprintf(out, "%s must be restarted to pick up the change: systemctl restart %s (or pass --restart-runtime)\n", service, service)
		}
	}
	return nil
}

func writeApplySummary(out io.Writer, report Report, dryRun bool) {
	for _, note := range report.Notes {
		fmt.Fprintf(out, "note: %s\n", note)
	}
	for _, w := range report.Warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	switch {
	case report.Changes == 0:
		fmt.Fprintln(out, "No changes: the host already matches the desired state.")
	case dryRun:
		fmt.Fprintf(out, "Dry run: %d change(s) would be made; nothing was changed.\n", report.Changes)
	default:
		fmt.Fprintf(out, "Applied %d change(s) (%d command(s) run and file(s) written).\n", report.Changes, report.Steps)
	}
	if report.RebootRequired {
		fmt.Fprintln(out, "Reboot required: some changes take effect only after the machine reboots; run `gpu-bootstrap check` after the reboot.")
	}
}
