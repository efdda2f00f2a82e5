package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// This file runs a change's steps one by one and keeps account of each:
// the commands of a Commands change and the ops of an Ops change (commands,
// file writes and removals, checks), so a change that fails part way says
// exactly which of its commands ran, and an Ops change's Undo puts back what
// they did. It also reads the warnings that package managers print while
// succeeding (apply_warnings.go).

// Op is one operation of an Ops change: exactly one of Command, File,
// Remove and Check is set.
type Op struct {
	Command *Command
	// FatalWarnings makes a Command that exits 0 fail when one of its
	// warnings (see commandWarnings) contains one of these strings: apt-get
	// update exits 0 on a repository whose signature no longer verifies
	// and keeps the old index, and an install from that repository must
	// not go on as if nothing happened.
	FatalWarnings []string
	// File is written atomically with a backup (Host.writeFile).
	File *FileChange
	// Remove is a file removed after a backup; a missing file is left
	// missing.
	Remove string
	// Check reads the host and fails when it is not as the change needs
	// (a branch the repository does not offer, a stack left mixed).
	Check func(ctx context.Context, h *Host) error
	// What says what Check checks, for the plan ("check that branch 550 is
	// in the repository").
	What string
}

// String is the op as the plan and the apply report show it.
func (o Op) String() string {
	switch {
	case o.Command != nil:
		return o.Command.String()
	case o.File != nil:
		if o.File.Created() {
			return "write " + o.File.Path
		}
		return "rewrite " + o.File.Path
	case o.Remove != "":
		return "remove " + o.Remove
	}
	return o.What
}

// CommandOp is an Op running c.
func CommandOp(c Command) Op { return Op{Command: &c} }

// changeProgress is what a change did while it ran: its steps that
// completed, the warnings they printed, and after a failure what Undo
// restored and what it could not.
type changeProgress struct {
	done      []string
	warnings  []string
	backup    string
	undone    []string
	notUndone []string
}

// runChange applies one change, recording every completed step.
func runChange(ctx context.Context, h *Host, change Change, backupRoot string) (changeProgress, error) {
	var p changeProgress
	switch {
	case change.File != nil:
		backup, err := h.writeFile(change.File, backupRoot)
		if err == nil {
			p.backup = backup
			p.done = append(p.done, "wrote "+change.File.Path)
		}
		return p, err
	case len(change.Commands) > 0:
		for _, cmd := range change.Commands {
			if err := runOp(ctx, h, CommandOp(cmd), backupRoot, &p); err != nil {
				return p, err
			}
		}
		return p, nil
	case len(change.Ops) > 0:
		for _, op := range change.Ops {
			if err := runOp(ctx, h, op, backupRoot, &p); err != nil {
				if len(p.done) > 0 && len(change.Undo) > 0 {
					undo(ctx, h, change.Undo, backupRoot, &p)
				}
				return p, err
			}
		}
		return p, nil
	case change.Action != nil:
		return p, change.Action(ctx, h)
	}
	return p, fmt.Errorf("change %q has nothing to do", change.Summary)
}

// runOp runs one op and records it in p when it completes.
func runOp(ctx context.Context, h *Host, op Op, backupRoot string, p *changeProgress) error {
	switch {
	case op.Command != nil:
		out, err := h.Runner.Run(ctx, *op.Command)
		if err != nil {
			return err
		}
		warnings := commandWarnings(out)
		if fatal := fatalWarnings(warnings, op.FatalWarnings); len(fatal) > 0 {
			return &WarningError{Command: *op.Command, Warnings: fatal}
		}
		p.warnings = append(p.warnings, warnings...)
		p.done = append(p.done, "ran "+op.Command.String())
	case op.File != nil:
		backup, err := h.writeFile(op.File, backupRoot)
		if err != nil {
			return err
		}
		if p.backup == "" {
			p.backup = backup
		}
		p.done = append(p.done, "wrote "+op.File.Path)
	case op.Remove != "":
		removed, err := h.removeFile(op.Remove, backupRoot)
		if err != nil {
			return err
		}
		if removed {
			p.done = append(p.done, "removed "+op.Remove)
		}
	case op.Check != nil:
		return op.Check(ctx, h)
	}
	return nil
}

// undo runs the undo ops, recording what it restored and what it could
// not. A failing command or file op does not stop it; a failing Check does:
// it says the rest must not be put back (the driver stack has already moved,
// and the old lock would contradict it).
func undo(ctx context.Context, h *Host, ops []Op, backupRoot string, p *changeProgress) {
	var scratch changeProgress
	for i, op := range ops {
		if err := runOp(ctx, h, op, backupRoot, &scratch); err != nil {
			if op.Check != nil {
				for _, rest := range ops[i+1:] {
					p.notUndone = append(p.notUndone, fmt.Sprintf("%s: not done, %v", rest, err))
				}
				return
			}
			p.notUndone = append(p.notUndone, fmt.Sprintf("%s: %v", op, err))
			continue
		}
		if op.Check == nil {
			p.undone = append(p.undone, op.String())
		}
	}
}

// removeFile removes a target file after keeping a backup of it; a missing
// file is not an error (removed is false then).
func (h *Host) removeFile(path, backupRoot string) (removed bool, err error) {
	data, exists, err := h.ReadFile(path)
	if err != nil || !exists {
		return false, err
	}
	info, err := os.Stat(h.Path(path))
	if err != nil {
		return false, err
	}
	backup, created, err := h.saveBackup(backupRoot, path, data, info.Mode().Perm())
	if err != nil {
		return false, fmt.Errorf("backing up %s before removing it: %w", path, err)
	}
	if err := os.Remove(h.Path(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if created {
			h.dropBackup(backup)
		}
		return false, err
	}
	return true, nil
}

// opsLines is a change's ops as the plan lists them.
func opsLines(ops []Op) []string {
	lines := make([]string, len(ops))
	for i, op := range ops {
		lines[i] = op.String()
	}
	return lines
}

// applyChange applies a change for a caller that needs only its backup
// (a step applying its own deferred changes).
func applyChange(ctx context.Context, h *Host, change Change, backupRoot string) (string, error) {
	p, err := runChange(ctx, h, change, backupRoot)
	return p.backup, err
}
