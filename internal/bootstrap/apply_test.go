package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// fileStep wants one file to hold one content: the smallest real step, used
// to test planning and applying rather than any step.
type fileStep struct {
	path    string
	content string
	restart string
}

func (s fileStep) Name() string { return "file " + s.path }

func (s fileStep) Plan(_ context.Context, h *Host) ([]Change, error) {
	old, exists, err := h.ReadFile(s.path)
	if err != nil {
		return nil, err
	}
	if exists && string(old) == s.content {
		return nil, nil
	}
	if !exists {
		old = nil
	}
	return []Change{{
		Summary: "write " + s.path,
		Ops:     []Op{FileOp{File: &FileChange{Path: s.path, Old: old, New: []byte(s.content), Mode: 0o640}}},
		Restart: s.restart,
	}}, nil
}

// commandStep runs a command until a marker file exists.
type commandStep struct{ marker string }

func (commandStep) Name() string { return "command" }

func (s commandStep) Plan(_ context.Context, h *Host) ([]Change, error) {
	if h.Exists(s.marker) {
		return nil, nil
	}
	return []Change{{Summary: "install", Ops: commandOps(Command{Root: h.Root, Name: "apt-get", Args: []string{"install", "-y", "thing"}})}}, nil
}

// pendingProbe records what Host.Pending said about an earlier step.
type pendingProbe struct{ saw *bool }

func (pendingProbe) Name() string { return "probe" }

func (p pendingProbe) Plan(_ context.Context, h *Host) ([]Change, error) {
	*p.saw = h.Pending("command")
	return nil, nil
}

var fixedNow = func() time.Time { return time.Date(2026, 11, 22, 7, 18, 0, 0, time.UTC) }

func newTestHost(t *testing.T) (*Host, *RecordingRunner) {
	t.Helper()
	runner := &RecordingRunner{}
	return &Host{Root: t.TempDir(), Runner: runner, Now: fixedNow, Getenv: func(string) string { return "" }}, runner
}

func writeTarget(t *testing.T, h *Host, path, content string, mode os.FileMode) {
	t.Helper()
	full := h.Path(path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(full, mode); err != nil {
		t.Fatal(err)
	}
}

func readTarget(t *testing.T, h *Host, path string) string {
	t.Helper()
	data, err := os.ReadFile(h.Path(path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestApplyReplacesAFileKeepingItsModeAndABackup(t *testing.T) {
	h, _ := newTestHost(t)
	writeTarget(t, h, "/etc/app/app.conf", "old\n", 0o600)
	var out bytes.Buffer
	report, err := Apply(context.Background(), h, []Step{fileStep{path: "/etc/app/app.conf", content: "new\n"}}, ApplyOptions{Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if got := readTarget(t, h, "/etc/app/app.conf"); got != "new\n" {
		t.Errorf("content = %q, want the new content", got)
	}
	info, err := os.Stat(h.Path("/etc/app/app.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want the old file's 0600 (not the step's default 0640)", info.Mode().Perm())
	}
	wantBackup := "/var/backups/gpu-bootstrap/20261122T071800Z/etc/app/app.conf"
	if len(report.Backups) != 1 || report.Backups[0] != wantBackup {
		t.Fatalf("backups = %v, want [%s]", report.Backups, wantBackup)
	}
	if got := readTarget(t, h, wantBackup); got != "old\n" {
		t.Errorf("backup holds %q, want the old content", got)
	}
	entries, err := os.ReadDir(h.Path("/etc/app"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("/etc/app holds %d entries, want only app.conf (no temporary or backup file beside it)", len(entries))
	}
}

func TestApplyCreatesAMissingFileWithTheStepsMode(t *testing.T) {
	h, _ := newTestHost(t)
	report, err := Apply(context.Background(), h, []Step{fileStep{path: "/etc/new/dir/file.toml", content: "x = 1\n"}}, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(h.Path("/etc/new/dir/file.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", info.Mode().Perm())
	}
	if len(report.Backups) != 0 {
		t.Errorf("backups = %v, want none for a new file", report.Backups)
	}
}

func TestSecondApplyChangesNothingAndSaysSo(t *testing.T) {
	h, runner := newTestHost(t)
	steps := []Step{fileStep{path: "/etc/a.conf", content: "a\n", restart: "containerd"}}
	if _, err := Apply(context.Background(), h, steps, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	before := readTarget(t, h, "/etc/a.conf")
	var out bytes.Buffer
	report, err := Apply(context.Background(), h, steps, ApplyOptions{Out: &out, RestartRuntime: true})
	if err != nil {
		t.Fatal(err)
	}
	if report.Changes != 0 || len(report.Restarts) != 0 {
		t.Errorf("second apply: %d changes, restarts %v; want none", report.Changes, report.Restarts)
	}
	if !strings.Contains(out.String(), "No changes") {
		t.Errorf("second apply output does not say there were no changes:\n%s", out.String())
	}
	if got := readTarget(t, h, "/etc/a.conf"); got != before {
		t.Errorf("file changed on the second apply")
	}
	if len(runner.Calls) != 0 {
		t.Errorf("second apply ran %v, want nothing (no restart when nothing changed)", runner.Lines())
	}
}

func TestDryRunPrintsTheFileAndChangesNothing(t *testing.T) {
	h, runner := newTestHost(t)
	writeTarget(t, h, "/etc/a.conf", "old\n", 0o644)
	var out bytes.Buffer
	steps := []Step{fileStep{path: "/etc/a.conf", content: "new content\n", restart: "docker"}, commandStep{marker: "/usr/bin/thing"}}
	report, err := Apply(context.Background(), h, steps, ApplyOptions{Out: &out, DryRun: true, RestartRuntime: true})
	if err != nil {
		t.Fatal(err)
	}
	if report.Changes != 2 {
		t.Errorf("changes = %d, want 2", report.Changes)
	}
	if got := readTarget(t, h, "/etc/a.conf"); got != "old\n" {
		t.Errorf("dry run wrote the file: %q", got)
	}
	if len(runner.Calls) != 0 {
		t.Errorf("dry run ran %v", runner.Lines())
	}
	for _, want := range []string{"new content", "apt-get install -y thing", "would run: systemctl restart docker", "nothing was changed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(h.Path(BackupDir)); !os.IsNotExist(err) {
		t.Errorf("dry run made a backup directory (err %v)", err)
	}
}

func TestApplyRestartsOnlyWhenAsked(t *testing.T) {
	for _, restart := range []bool{false, true} {
		h, runner := newTestHost(t)
		var out bytes.Buffer
		_, err := Apply(context.Background(), h, []Step{fileStep{path: "/etc/c.toml", content: "c\n", restart: "containerd"}}, ApplyOptions{Out: &out, RestartRuntime: restart})
		if err != nil {
			t.Fatal(err)
		}
		ran := strings.Join(runner.Lines(), "\n")
		if restart && !strings.Contains(ran, "systemctl restart containerd") {
			t.Errorf("--restart-runtime: ran %q, want systemctl restart containerd", ran)
		}
		if !restart {
			if ran != "" {
				t.Errorf("without --restart-runtime: ran %q, want nothing", ran)
			}
			if !strings.Contains(out.String(), "containerd must be restarted") {
				t.Errorf("without --restart-runtime the output does not say containerd must restart:\n%s", out.String())
			}
		}
	}
}

func TestAFailedCommandStopsTheApply(t *testing.T) {
	h, runner := newTestHost(t)
	runner.Reply("apt-get install", Output{ExitCode: 100, Stderr: []byte("E: Unable to locate package thing\n")})
	steps := []Step{commandStep{marker: "/usr/bin/thing"}, fileStep{path: "/etc/after.conf", content: "x\n"}}
	_, err := Apply(context.Background(), h, steps, ApplyOptions{})
	var cmdErr *CommandError
	if !errors.As(err, &cmdErr) {
		t.Fatalf("err = %v, want a *CommandError", err)
	}
	if !strings.Contains(err.Error(), "Unable to locate package thing") || !strings.Contains(err.Error(), "status 100") {
		t.Errorf("error %q does not carry the exit status and stderr", err)
	}
	if h.Exists("/etc/after.conf") {
		t.Error("a step after the failure was applied")
	}
}

func TestAFileChangedSincePlanningIsNotOverwritten(t *testing.T) {
	h, _ := newTestHost(t)
	writeTarget(t, h, "/etc/a.conf", "planned\n", 0o644)
	change := &FileChange{Path: "/etc/a.conf", Old: []byte("planned\n"), New: []byte("ours\n")}
	writeTarget(t, h, "/etc/a.conf", "edited meanwhile\n", 0o644)
	if _, err := h.writeFile(change, "/var/backups/x"); err == nil || !strings.Contains(err.Error(), "changed since it was planned") {
		t.Fatalf("err = %v, want a changed-since-planned error", err)
	}
	if got := readTarget(t, h, "/etc/a.conf"); got != "edited meanwhile\n" {
		t.Errorf("file overwritten: %q", got)
	}
}

func TestLaterStepsSeeEarlierPendingSteps(t *testing.T) {
	h, _ := newTestHost(t)
	var saw bool
	plan, err := MakePlan(context.Background(), h, []Step{commandStep{marker: "/usr/bin/thing"}, pendingProbe{saw: &saw}})
	if err != nil {
		t.Fatal(err)
	}
	if !saw {
		t.Error("the probe did not see the command step as pending")
	}
	if plan.Count() != 1 || plan.Empty() {
		t.Errorf("plan count %d, want 1", plan.Count())
	}
	writeTarget(t, h, "/usr/bin/thing", "", 0o755)
	if _, err := MakePlan(context.Background(), h, []Step{commandStep{marker: "/usr/bin/thing"}, pendingProbe{saw: &saw}}); err != nil {
		t.Fatal(err)
	}
	if saw {
		t.Error("the probe saw the command step pending after it was satisfied")
	}
}

func TestWritePlanShowsADiff(t *testing.T) {
	h, _ := newTestHost(t)
	writeTarget(t, h, "/etc/a.conf", "keep\nold\n", 0o644)
	plan, err := MakePlan(context.Background(), h, []Step{fileStep{path: "/etc/a.conf", content: "keep\nnew\n"}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	WritePlan(&out, plan)
	for _, want := range []string{"will write /etc/a.conf", "-old", "+new", " keep", "Plan: 1 change(s)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCommandStringQuotesWhatAShellWouldSplit(t *testing.T) {
	c := Command{Root: "/mnt/image", Name: "env", Args: []string{"DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "nvidia-driver-570-open", "a b"}}
	want := `chroot /mnt/image env DEBIAN_FRONTEND=noninteractive apt-get install -y nvidia-driver-570-open "a b"`
	if got := c.String(); got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
}

func TestApplyKeepsTheOwnerOfAReplacedFile(t *testing.T) {
	h, _ := newTestHost(t)
	writeTarget(t, h, "/etc/app/owned.conf", "old\n", 0o640)
	uid, gid := os.Getuid(), os.Getgid()
	if os.Geteuid() == 0 {
		// As root (CI), give the file an owner that is not the writer's.
		uid, gid = 1234, 5678
		if err := os.Chown(h.Path("/etc/app/owned.conf"), uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Apply(context.Background(), h, []Step{fileStep{path: "/etc/app/owned.conf", content: "new\n"}}, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(h.Path("/etc/app/owned.conf"))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("no owner in %T", info.Sys())
	}
	if int(st.Uid) != uid || int(st.Gid) != gid || info.Mode().Perm() != 0o640 {
		t.Errorf("replaced file is %d:%d %v, want %d:%d 0640", st.Uid, st.Gid, info.Mode().Perm(), uid, gid)
	}
}

func TestFileDiffShowsOnlyRealLines(t *testing.T) {
	diff := FileDiff(&FileChange{Path: "/etc/a.conf", Old: []byte("a\nb\n"), New: []byte("a\nb\nc\n")})
	want := "--- /etc/a.conf\n+++ /etc/a.conf\n@@ -1,2 +1,3 @@\n a\n b\n+c\n"
	if diff != want {
		t.Errorf("diff:\n%q\nwant:\n%q", diff, want)
	}
	if diff := FileDiff(&FileChange{Path: "/etc/new", New: []byte("x\n")}); !strings.HasSuffix(diff, "@@ -0,0 +1 @@\n+x\n") {
		t.Errorf("diff of a new file:\n%q", diff)
	}
}

// countingGPUs counts the snapshots taken of the library it wraps.
type countingGPUs struct {
	nvml.Library
	snapshots int
}

func (c *countingGPUs) Snapshot() (nvml.Snapshot, error) {
	c.snapshots++
	return c.Library.Snapshot()
}

func TestAPlanningPassReadsTheGPUsOnce(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	gpus := &countingGPUs{Library: nvml.New(nvml.Options{Lib: fleet.Server, SysfsRoot: t.TempDir()})}
	h, _ := newTestHost(t)
	h.GPUs = gpus
	limit := uint32(300)
	steps := []Step{newDriverStep(DriverConfig{Branch: "550"}), newPersistenceStep(), newGPUSettingsStep(GPUSettingsConfig{PowerLimitWatts: &limit})}

	plan, err := MakePlan(context.Background(), h, steps)
	if err != nil {
		t.Fatal(err)
	}
	if gpus.snapshots != 1 {
		t.Errorf("planning three GPU steps took %d snapshots, want 1", gpus.snapshots)
	}
	if plan.Count() == 0 {
		t.Fatal("the plan is empty: persistence and the power limit should differ")
	}

	// Applying changes the GPUs between steps: each step reads them anew
	// and sees what the ones before it did.
	gpus.snapshots = 0
	if _, err := Apply(context.Background(), h, steps, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if gpus.snapshots < len(steps) {
		t.Errorf("apply took %d snapshots for %d steps, want one per step at least", gpus.snapshots, len(steps))
	}
	gpus.snapshots = 0
	if plan, err := MakePlan(context.Background(), h, steps); err != nil || !plan.Empty() || gpus.snapshots != 1 {
		t.Errorf("plan after apply: %d changes, err %v, %d snapshots; want none, nil, 1", plan.Count(), err, gpus.snapshots)
	}
}
