package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
)

// TestConfigFileErrorsStopEveryCommand: a --config that says nothing, says
// two things, is not a file, or whose value a flag made invalid, stops plan,
// apply and check with exit 1, an error that names where, and nothing done.
func TestConfigFileErrorsStopEveryCommand(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		return path
	}
	tests := []struct {
		description string
		args        []string
		want        string
	}{
		{
			description: "An empty config is an error, not \"No changes\".",
			args:        []string{"--config", file("empty.yaml", "")},
			want:        "empty.yaml: the config has no sections",
		},
		{
			description: "A comment-only config is an error.",
			args:        []string{"--config", file("comments.yaml", "# runtime:\n#   engine: containerd\n")},
			want:        "comments.yaml: the config has no sections",
		},
		{
			description: "A second YAML document is rejected, not ignored.",
			args:        []string{"--config", file("two.yaml", "runtime:\n  engine: containerd\n---\npersistence: true\n")},
			want:        "two.yaml:3:1: a second YAML document starts here",
		},
		{
			description: "A type error names the line and column.",
			args:        []string{"--config", file("type.yaml", "verify:\n  expect_gpus: \"8\"\n")},
			want:        `type.yaml:2:16: verify.expect_gpus: is the quoted text "8"; want a whole number`,
		},
		{
			description: "A directory is not a config file.",
			args:        []string{"--config", dir},
			want:        "is a directory; give --config the desired-state YAML file itself",
		},
		{
			description: "A flag's bad value is reported as the flag's.",
			args:        []string{"--config", file("ok.yaml", "runtime:\n  engine: containerd\n"), "--runtime", "podman"},
			want:        `runtime.engine (set by --runtime): "podman" is not a container engine`,
		},
		{
			description: "A bad value in the file names its line.",
			args:        []string{"--config", file("bad.yaml", "persistence: true\nruntime:\n  engine: podman\n")},
			want:        `bad.yaml:3:11: runtime.engine: "podman" is not a container engine`,
		},
	}
	for _, tc := range tests {
		for _, command := range []string{"plan", "apply", "check"} {
			t.Run(command+": "+tc.description, func(t *testing.T) {
				env, stdout, stderr, runner := testEnv(nvmltest.NewDGXA100(), nil)
				root := t.TempDir()
				code := runIn(env, append([]string{command, "--root", root}, tc.args...)...)
				require.Equal(t, exitError, code, "stdout %s\nstderr %s", stdout, stderr)
				require.Contains(t, stderr.String(), tc.want)
				require.Contains(t, stderr.String(), "nothing was changed")
				require.NotContains(t, stdout.String(), "No changes")
				entries, err := os.ReadDir(root)
				require.NoError(t, err)
				require.Empty(t, entries, "the root was touched")
				require.Empty(t, runner.Calls, "commands ran: %s", strings.Join(runner.Lines(), "; "))
			})
		}
	}
}
