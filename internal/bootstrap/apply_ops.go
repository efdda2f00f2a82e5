package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// This file owns what a change is made of, its ops, and runs them one by
// one keeping account of each (commands, file writes and removals, checks,
// GPU actions), so a change that fails part way says exactly which of its
// ops ran, and a change's Undo puts back what they did. It also reads the
// warnings that package managers print while succeeding (apply_warnings.go).

// Op is one operation of a change. Its type says which: CommandOp, FileOp,
// RemoveOp, CheckOp or ActionOp, each holding only what it needs.
type Op interface {
	// String is the op as the plan and the apply report show it; "" for
	// an ActionOp, which the plan does not list.
	String() string
	// run applies the op and records it in p when it completes.
	run(ctx context.Context, h *Host, backupRoot string, p *changeProgress) error
}

// CommandOp runs a command.
type CommandOp struct {
	Command Command
	// FatalWarnings makes a command that exits 0 fail when one of its
	// warnings (see commandWarnings) contains one of these strings: apt-get
	// update exits 0 on a repository whose signature no longer verifies
	// and keeps the old index, and an install from that repository must
	// not go on as if nothing happened.
	FatalWarnings []string
}

// FileOp writes a file atomically with a backup (Host.writeFile).
type FileOp struct{ File *FileChange }

// RemoveOp removes a file after a backup; a missing file is left missing.
type RemoveOp struct{ Path string }

// CheckOp reads the host and fails when it is not as the change needs (a
// branch the repository does not offer, a stack left mixed).
type CheckOp struct {
	// What says what it checks, for the plan ("check that branch 550 is
	// in the repository").
	What  string
	Check func(ctx context.Context, h *Host) error
}

// ActionOp changes GPU state through NVML.
type ActionOp func(ctx context.Context, h *Host) error

func (o CommandOp) String() string { return o.Command.String() }
func (o FileOp) String() string {
	if o.File.Created() {
		return "write " + o.File.Path
	}
	return "rewrite " + o.File.Path
}
func (o RemoveOp) String() string { return "remove " + o.Path }
func (o CheckOp) String() string  { return o.What }
func (ActionOp) String() string   { return "" }

// commandOps are CommandOps running cmds in order.
func commandOps(cmds ...Command) []Op {
	ops := make([]Op, len(cmds))
	for i, cmd := range cmds {
		ops[i] = CommandOp{Command: cmd}
	}
	return ops
}

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

// runChange applies one change, recording every completed op; when an op
// fails after others ran, the change's Undo runs.
func runChange(ctx context.Context, h *Host, change Change, backupRoot string) (changeProgress, error) {
	var p changeProgress
	if len(change.Ops) == 0 {
		return p, fmt.Errorf("change %q has nothing to do", change.Summary)
	}
	for _, op := range change.Ops {
		if err := op.run(ctx, h, backupRoot, &p); err != nil {
			if len(p.done) > 0 && len(change.Undo) > 0 {
				undo(ctx, h, change.Undo, backupRoot, &p)
			}
			return p, err
		}
	}
	return p, nil
}

func (o CommandOp) run(ctx context.Context, h *Host, _ string, p *changeProgress) error {
	out, err := h.Runner.Run(ctx, o.Command)
	if err != nil {
		return err
	}
	warnings := commandWarnings(out)
	if fatal := fatalWarnings(warnings, o.FatalWarnings); len(fatal) > 0 {
		return &WarningError{Command: o.Command, Warnings: fatal}
	}
	p.warnings = append(p.warnings, warnings...)
	p.done = append(p.done, "ran "+o.Command.String())
	return nil
}

func (o FileOp) run(_ context.Context, h *Host, backupRoot string, p *changeProgress) error {
	backup, err := h.writeFile(o.File, backupRoot)
	if err != nil {
		return err
	}
	if p.backup == "" {
		p.backup = backup
	}
	p.done = append(p.done, "wrote "+o.File.Path)
	return nil
}

func (o RemoveOp) run(_ context.Context, h *Host, backupRoot string, p *changeProgress) error {
	removed, err := h.removeFile(o.Path, backupRoot)
	if err != nil {
		return err
	}
	if removed {
		p.done = append(p.done, "removed "+o.Path)
	}
	return nil
}

func (o CheckOp) run(ctx context.Context, h *Host, _ string, _ *changeProgress) error {
	return o.Check(ctx, h)
}

func (o ActionOp) run(ctx context.Context, h *Host, _ string, _ *changeProgress) error {
	return o(ctx, h)
}

// undo runs the undo ops, recording what it restored and what it could
// not. A failing command or file op does not stop it; a failing check does:
// it says the rest must not be put back (the driver stack has already moved,
// and the old lock would contradict it).
func undo(ctx context.Context, h *Host, ops []Op, backupRoot string, p *changeProgress) {
	var scratch changeProgress
	for i, op := range ops {
		_, isCheck := op.(CheckOp)
		if err := op.run(ctx, h, backupRoot, &scratch); err != nil {
			if isCheck {
				for _, rest := range ops[i+1:] {
					p.notUndone = append(p.notUndone, fmt.Sprintf("%s: not done, %v", rest, err))
				}
				return
			}
			p.notUndone = append(p.notUndone, fmt.Sprintf("%s: %v", op, err))
			continue
		}
		if !isCheck {
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

// opsLines is a change's ops as the plan lists them; an ActionOp has no
// line.
func opsLines(ops []Op) []string {
	var lines []string
	for _, op := range ops {
		if line := op.String(); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// applyChange applies a change for a caller that needs only its backup
// (a step applying its own deferred changes).
func applyChange(ctx context.Context, h *Host, change Change, backupRoot string) (string, error) {
	p, err := runChange(ctx, h, change, backupRoot)
	return p.backup, err
}
