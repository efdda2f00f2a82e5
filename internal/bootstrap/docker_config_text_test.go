package bootstrap

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDockerConfigTextEncodings: dockerd reads a daemon.json that starts
// with a UTF-8 byte order mark (Notepad writes one), so the edit keeps the
// mark and the rest of the file; a UTF-16 file (Windows PowerShell) is
// refused in words at 1:1, not as "invalid character 'ÿ'".
func TestDockerConfigTextEncodings(t *testing.T) {
	plan := func(t *testing.T, content string) ([]Change, error) {
		root := t.TempDir()
		installNvidiaRuntime(t, root)
		path := filepath.Join(root, "etc/docker/daemon.json")
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		return newRuntimeStep(RuntimeConfig{Engine: engineDocker}, nil).Plan(context.Background(), &Host{Root: root, Runner: &RecordingRunner{}})
	}

	changes, err := plan(t, "\uFEFF{\n  \"log-driver\": \"journald\"\n}\n")
	require.NoError(t, err)
	require.Len(t, changes, 1)
	got := string(changes[0].File().New)
	require.Equal(t, "\uFEFF{\n  \"log-driver\": \"journald\",\n", got[:len("\uFEFF{\n  \"log-driver\": \"journald\",\n")], "the mark and the member stay as they were:\n%s", got)
	require.Contains(t, got, `"nvidia"`)

	_, err = plan(t, "\xff\xfe{\x00}\x00")
	var perr *ParseError
	require.True(t, errors.As(err, &perr), "want a *ParseError, got %v", err)
	require.ErrorContains(t, err, "/etc/docker/daemon.json:1:1: the file is UTF-16")
}
