package bootstrap

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestContainerdConfigTextContainerdCannotRead: a containerd config whose
// version key containerd cannot decode, or (for containerd 2.x) that starts
// with a byte order mark, is a *ParseError naming the file, line and column
// and what to write; one containerd reads as it is gets planned as usual.
func TestContainerdConfigTextContainerdCannotRead(t *testing.T) {
	const containerd17 = "containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da"
	const containerd20 = "containerd github.com/containerd/containerd/v2 v2.0.2 c507a0257ea6462fbd6f5ba4f5c74facb04021f4"
	tests := []struct {
		description string
		version     string // containerd --version
		config      string
		want        string // "" = plans without error
	}{
		{
			description: "version as text names its place and says to drop the quotes.",
			version:     containerd17,
			config:      "# site\nversion = \"2\"\n",
			want:        `/etc/containerd/config.toml:2:11: version = "2" is text; containerd reads the version as a number (1, 2 or 3) and cannot load this file: write version = 2, without quotes`,
		},
		{
			description: "A version number containerd has no schema for.",
			version:     containerd17,
			config:      "\n\nversion    = 7\n",
			want:        "/etc/containerd/config.toml:3:14: version = 7 is not a containerd config version (1, 2 or 3); write version = 2 for containerd 1.x, 3 for 2.x",
		},
		{
			description: "A byte order mark, which containerd 2.x cannot read.",
			version:     containerd20,
			config:      "\uFEFFversion = 3\n",
			want:        "/etc/containerd/config.toml:1:1: the file starts with a UTF-8 byte order mark, which containerd 2.0.2's TOML reader (go-toml v2) refuses",
		},
		{
			description: "A byte order mark, which containerd 1.7 (go-toml v1) skips, is kept.",
			version:     containerd17,
			config:      "\uFEFFversion = 2\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			root := t.TempDir()
			installNvidiaRuntime(t, root)
			path := filepath.Join(root, "etc/containerd/config.toml")
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte(tc.config), 0o644))
			runner := &RecordingRunner{}
			runner.Reply("containerd --version", Output{Stdout: []byte(tc.version + "\n")})
			h := &Host{Root: root, Runner: runner}
			changes, err := newRuntimeStep(RuntimeConfig{Engine: engineContainerd}, nil).Plan(context.Background(), h)
			if tc.want == "" {
				require.NoError(t, err)
				require.Len(t, changes, 1)
				require.Equal(t, "\uFEFF", string(changes[0].File().New[:3]), "the mark stays where it was")
				return
			}
			var perr *ParseError
			require.True(t, errors.As(err, &perr), "want a *ParseError, got %v", err)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
