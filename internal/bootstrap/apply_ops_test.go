package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// opsStep plans one change.
type opsStep struct{ change Change }

func (opsStep) Name() string { return "ops" }

func (s opsStep) Plan(context.Context, *Host) ([]Change, error) { return []Change{s.change}, nil }

func cmd(h *Host, name string, args ...string) Op {
	return CommandOp{Command: Command{Root: h.Root, Name: name, Args: args}}
}

func TestAFailedChangeSaysWhichOfItsCommandsRanAndWhatItPutBack(t *testing.T) {
	h, runner := newTestHost(t)
	writeTarget(t, h, "/etc/lock", "old lock\n", 0o644)
	runner.Reply("apt-get install -y stack", Output{ExitCode: 100, Stderr: []byte("E: Failed to fetch https://x/libnvidia-ml1.deb  404  Not Found")})
	change := Change{
		Summary: "move the stack",
		Ops: []Op{
			cmd(h, "apt-get", "purge", "-y", "old-pin"),
			FileOp{File: &FileChange{Path: "/etc/lock", Old: []byte("old lock\n"), New: []byte("new lock\n")}},
			cmd(h, "apt-get", "install", "-y", "stack"),
		},
		Undo: []Op{
			FileOp{File: &FileChange{Path: "/etc/lock", Old: []byte("new lock\n"), New: []byte("old lock\n")}},
			cmd(h, "apt-get", "install", "-y", "old-pin"),
		},
	}
	var out bytes.Buffer
	report, err := Apply(context.Background(), h, []Step{opsStep{change}}, ApplyOptions{Out: &out})
	var partial *PartialApplyError
	if !errors.As(err, &partial) {
		t.Fatalf("err = %v, want a PartialApplyError", err)
	}
	if got := strings.Join(partial.PartlyApplied, "\n"); got != "ran chroot "+h.Root+" apt-get purge -y old-pin\nwrote /etc/lock" {
		t.Errorf("partly applied = %q: the failed change's purge and lock write happened and must be reported", got)
	}
	if got := strings.Join(partial.Undone, "\n"); got != "rewrite /etc/lock\nchroot "+h.Root+" apt-get install -y old-pin" {
		t.Errorf("undone = %q", got)
	}
	if len(partial.NotUndone) != 0 {
		t.Errorf("not undone = %v", partial.NotUndone)
	}
	if data, _, _ := h.ReadFile("/etc/lock"); string(data) != "old lock\n" {
		t.Errorf("/etc/lock = %q after the undo, want the old lock back", data)
	}
	msg := err.Error()
	for _, want := range []string{"apt-get purge -y old-pin", "wrote /etc/lock", "put back after the failure", "404"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if report.Changes != 0 || report.Steps != 2 {
		t.Errorf("report = %d change(s), %d step(s); want 0 changes, 2 steps run", report.Changes, report.Steps)
	}
}

func TestAFailedCommandsChangeListsTheCommandsThatRan(t *testing.T) {
	h, runner := newTestHost(t)
	runner.Reply("apt-get install", Output{ExitCode: 100})
	change := Change{Summary: "pin and install", Ops: commandOps(
		Command{Root: h.Root, Name: "apt-get", Args: []string{"update"}},
		Command{Root: h.Root, Name: "apt-mark", Args: []string{"hold", "x"}},
		Command{Root: h.Root, Name: "apt-get", Args: []string{"install", "-y", "x"}},
	)}
	_, err := Apply(context.Background(), h, []Step{opsStep{change}}, ApplyOptions{})
	var partial *PartialApplyError
	if !errors.As(err, &partial) || len(partial.PartlyApplied) != 2 || !strings.HasSuffix(partial.PartlyApplied[1], "apt-mark hold x") {
		t.Fatalf("err = %v; want the update and the hold listed as done", err)
	}
}

func TestUndoStopsWhereACheckSaysTheHostMovedOn(t *testing.T) {
	h, runner := newTestHost(t)
	runner.Reply("fail", Output{ExitCode: 1})
	change := Change{
		Summary: "x",
		Ops:     []Op{cmd(h, "ok"), cmd(h, "fail")},
		Undo: []Op{
			CheckOp{What: "stack unchanged", Check: func(context.Context, *Host) error { return errors.New("the stack moved") }},
			cmd(h, "restore-old-lock"),
		},
	}
	_, err := Apply(context.Background(), h, []Step{opsStep{change}}, ApplyOptions{})
	var partial *PartialApplyError
	if !errors.As(err, &partial) {
		t.Fatal(err)
	}
	if len(partial.Undone) != 0 || len(partial.NotUndone) != 1 || !strings.Contains(partial.NotUndone[0], "the stack moved") {
		t.Errorf("undone %v, not undone %v; want the restore skipped with the check's reason", partial.Undone, partial.NotUndone)
	}
	for _, line := range runner.Lines() {
		if strings.Contains(line, "restore-old-lock") {
			t.Errorf("ran %q although the check said not to", line)
		}
	}
}

func TestAptWarningsAreShownAndTheRepositorysOwnStopTheChange(t *testing.T) {
	const cuda = "developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64"
	gpgWarning := "W: GPG error: https://" + cuda + "  InRelease: The following signatures couldn't be verified because the public key is not available: NO_PUBKEY A4B469963BF863CC\n" +
		"W: Failed to fetch https://" + cuda + "/InRelease  The following signatures couldn't be verified\n" +
		"W: Some index files failed to download. They have been ignored, or old ones used instead.\n"
	other := "W: Failed to fetch http://deb.example.org/dists/x/InRelease  Could not resolve 'deb.example.org'\n"

	t.Run("a warning about another repository is shown, and the change goes on", func(t *testing.T) {
		h, runner := newTestHost(t)
		runner.Reply("apt-get update", Output{Stderr: []byte(other)})
		change := Change{Summary: "install", Ops: []Op{
			CommandOp{Command: Command{Root: h.Root, Name: "apt-get", Args: []string{"update"}}, FatalWarnings: []string{cuda}},
			cmd(h, "apt-get", "install", "-y", "nvidia-open"),
		}}
		var out bytes.Buffer
		report, err := Apply(context.Background(), h, []Step{opsStep{change}}, ApplyOptions{Out: &out})
		if err != nil {
			t.Fatal(err)
		}
		if len(report.Warnings) != 1 || !strings.Contains(out.String(), "warning: Failed to fetch http://deb.example.org") {
			t.Errorf("warnings %v, output:\n%s", report.Warnings, out.String())
		}
	})
	t.Run("a GPG error on the repository installed from stops before the install", func(t *testing.T) {
		h, runner := newTestHost(t)
		runner.Reply("apt-get update", Output{Stderr: []byte(gpgWarning)})
		change := Change{Summary: "install", Ops: []Op{
			CommandOp{Command: Command{Root: h.Root, Name: "apt-get", Args: []string{"update"}}, FatalWarnings: []string{cuda}},
			cmd(h, "apt-get", "install", "-y", "nvidia-open"),
		}}
		_, err := Apply(context.Background(), h, []Step{opsStep{change}}, ApplyOptions{})
		var warning *WarningError
		if !errors.As(err, &warning) || !strings.Contains(err.Error(), "NO_PUBKEY") {
			t.Fatalf("err = %v, want a WarningError quoting the GPG error", err)
		}
		for _, line := range runner.Lines() {
			if strings.Contains(line, "install") {
				t.Errorf("ran %q on an unverified index", line)
			}
		}
	})
}
