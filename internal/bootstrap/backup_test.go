package bootstrap

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Two applies in the same second (the test clock never moves) each keep
// their own backup, and the first one's copy of the original survives.
func TestTwoAppliesInOneSecondKeepBothBackups(t *testing.T) {
	h, _ := newTestHost(t)
	writeTarget(t, h, "/etc/app/app.conf", "original\n", 0o644)

	first, err := Apply(context.Background(), h, []Step{fileStep{path: "/etc/app/app.conf", content: "second\n"}}, ApplyOptions{})
	require.NoError(t, err)
	second, err := Apply(context.Background(), h, []Step{fileStep{path: "/etc/app/app.conf", content: "third\n"}}, ApplyOptions{})
	require.NoError(t, err)

	require.Equal(t, []string{"/var/backups/gpu-bootstrap/20261122T071800Z/etc/app/app.conf"}, first.Backups)
	require.Equal(t, []string{"/var/backups/gpu-bootstrap/20261122T071800Z-2/etc/app/app.conf"}, second.Backups)
	require.Equal(t, "original\n", readTarget(t, h, first.Backups[0]))
	require.Equal(t, "second\n", readTarget(t, h, second.Backups[0]))
}

// A backup directory left by another run is never written into, and a
// backup file that is there anyway is never overwritten.
func TestABackupIsNeverOverwritten(t *testing.T) {
	h, _ := newTestHost(t)
	writeTarget(t, h, "/var/backups/gpu-bootstrap/20261122T071800Z/etc/app/app.conf", "kept\n", 0o600)
	require.Equal(t, "/var/backups/gpu-bootstrap/20261122T071800Z-2", h.backupRunDir(fixedNow()))

	writeTarget(t, h, "/etc/app/app.conf", "current\n", 0o644)
	change := &FileChange{Path: "/etc/app/app.conf", Old: []byte("current\n"), New: []byte("new\n")}
	_, err := h.writeFile(change, "/var/backups/gpu-bootstrap/20261122T071800Z")
	require.ErrorContains(t, err, "the backup /var/backups/gpu-bootstrap/20261122T071800Z/etc/app/app.conf already exists and is not overwritten")
	require.Equal(t, "kept\n", readTarget(t, h, "/var/backups/gpu-bootstrap/20261122T071800Z/etc/app/app.conf"))
	require.Equal(t, "current\n", readTarget(t, h, "/etc/app/app.conf"), "no backup, no write")
}

// A file changed twice in one run keeps the original as its backup.
func TestAFileChangedTwiceInOneRunKeepsTheOriginal(t *testing.T) {
	h, _ := newTestHost(t)
	writeTarget(t, h, "/etc/app/app.conf", "original\n", 0o644)
	report, err := Apply(context.Background(), h, []Step{
		fileStep{path: "/etc/app/app.conf", content: "one\n"},
		fileStep{path: "/etc/app/app.conf", content: "two\n"},
	}, ApplyOptions{})
	require.NoError(t, err)
	require.Len(t, report.Backups, 2)
	require.Equal(t, report.Backups[0], report.Backups[1])
	require.Equal(t, "original\n", readTarget(t, h, report.Backups[0]))
	require.Equal(t, "two\n", readTarget(t, h, "/etc/app/app.conf"))
}

// A write that fails leaves its file as it was and no backup of it, and the
// error says what was changed before it and what was not.
func TestAFailedWriteSaysWhatWasAndWasNotChanged(t *testing.T) {
	h, _ := newTestHost(t)
	// A name whose temporary file ("."+name+".gpu-bootstrap-NNN") is longer
	// than a file name may be: the write fails even for root.
	long := "/etc/app/" + strings.Repeat("n", 240)
	writeTarget(t, h, long, "old\n", 0o644)
	steps := []Step{
		fileStep{path: "/etc/app/first.conf", content: "1\n", restart: "app"},
		fileStep{path: long, content: "new\n"},
		fileStep{path: "/etc/app/later.conf", content: "3\n"},
	}
	report, err := Apply(context.Background(), h, steps, ApplyOptions{})
	require.Error(t, err)
	var partial *PartialApplyError
	require.ErrorAs(t, err, &partial)
	require.Equal(t, []string{"file /etc/app/first.conf: write /etc/app/first.conf"}, partial.Applied)
	require.Equal(t, []string{"file " + long + ": write " + long}, partial.NotApplied)
	require.Equal(t, []string{"file /etc/app/later.conf"}, partial.NotPlanned)
	require.Contains(t, err.Error(), "changed before the failure:\n    - file /etc/app/first.conf")
	require.Contains(t, err.Error(), "the file was left unchanged")
	require.Equal(t, []string{"app"}, partial.Restarts)
	require.Contains(t, err.Error(), "app was not restarted for what was changed: systemctl restart app")
	require.Equal(t, 1, report.Changes, "the report counts only what was applied")

	require.Equal(t, "old\n", readTarget(t, h, long))
	require.Empty(t, report.Backups)
	_, statErr := os.Stat(filepath.Join(h.Path("/var/backups/gpu-bootstrap/20261122T071800Z"), long))
	require.True(t, os.IsNotExist(statErr), "the backup of the unchanged file is removed (err %v)", statErr)
	require.False(t, h.Exists("/etc/app/later.conf"))
}

// A root whose backup directory is a link out of it keeps its backups
// inside the root all the same.
func TestBackupsThroughALinkedBackupDirStayInsideTheRoot(t *testing.T) {
	outside := t.TempDir()
	h, _ := newTestHost(t)
	rootLayout(t, h.Root, map[string]string{"var/backups": "->" + outside})
	writeTarget(t, h, "/etc/app/app.conf", "original\n", 0o644)
	report, err := Apply(context.Background(), h, []Step{fileStep{path: "/etc/app/app.conf", content: "new\n"}}, ApplyOptions{})
	require.NoError(t, err)
	require.Len(t, report.Backups, 1)
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing is written to the build host's directory the link names")
	data, err := os.ReadFile(filepath.Join(h.Root, outside, "gpu-bootstrap/20261122T071800Z/etc/app/app.conf"))
	require.NoError(t, err, "the backup is at the link's target inside the root")
	require.Equal(t, "original\n", string(data))
}

// failingPlan is a step whose planning fails.
type failingPlan struct{}

func (failingPlan) Name() string { return "broken" }

func (failingPlan) Plan(context.Context, *Host) ([]Change, error) {
	return nil, errors.New("cannot read the engine config")
}

// A step that fails to plan after earlier steps changed the host gets the
// same account of what was changed.
func TestAPlanFailureAfterChangesSaysWhatWasChanged(t *testing.T) {
	h, _ := newTestHost(t)
	_, err := Apply(context.Background(), h, []Step{
		fileStep{path: "/etc/app/first.conf", content: "1\n"},
		failingPlan{},
		fileStep{path: "/etc/app/later.conf", content: "3\n"},
	}, ApplyOptions{})
	var partial *PartialApplyError
	require.ErrorAs(t, err, &partial)
	require.Equal(t, []string{"file /etc/app/first.conf: write /etc/app/first.conf"}, partial.Applied)
	require.Empty(t, partial.NotApplied)
	require.Equal(t, []string{"file /etc/app/later.conf"}, partial.NotPlanned)
	require.True(t, strings.HasPrefix(err.Error(), "broken: cannot read the engine config\n"), "the step is named once: %q", err)
}
