package bootstrap

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestVerifyNamesAnEngineThatDidNotRestartAfterItsConfigChanged(t *testing.T) {
	cfg := &RuntimeConfig{Engine: engineContainerd}
	for _, tc := range []struct {
		description string
		started     string // what systemctl show prints
		dropInAge   time.Duration
		problem     string
		check       string
	}{
		{"restarted after the change", "@" + unix(time.Now().Add(time.Minute)), time.Hour, "", "containerd started after its config last changed"},
		{"a drop-in written after the start", "@" + unix(time.Now().Add(-time.Hour)), 0, "/etc/containerd/conf.d/99-nvidia.toml changed at", ""},
		{"old systemd spelling", time.Now().Add(-time.Hour).UTC().Format("Mon 2006-01-02 15:04:05 MST"), 0, "restart it to load the nvidia runtime (systemctl restart containerd", ""},
		{"not running", "", 0, "", ""},
	} {
		t.Run(tc.description, func(t *testing.T) {
			h, runner := newTestHost(t)
			// containerd reads the drop-in because the main file imports it
			// (relative to its own directory).
			writeTarget(t, h, "/etc/containerd/config.toml", "version = 2\nimports = [\"conf.d/*.toml\"]\n", 0o644)
			writeTarget(t, h, "/etc/containerd/conf.d/99-nvidia.toml", "version = 2\n", 0o644)
			old := time.Now().Add(-2 * time.Hour)
			if err := os.Chtimes(h.Path("/etc/containerd/config.toml"), old, old); err != nil {
				t.Fatal(err)
			}
			changed := time.Now().Add(-tc.dropInAge)
			if err := os.Chtimes(h.Path("/etc/containerd/conf.d/99-nvidia.toml"), changed, changed); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(tc.started, "@") {
				runner.Reply("systemctl show containerd --property=ActiveEnterTimestamp --value --timestamp=unix", Output{Stdout: []byte(tc.started + "\n")})
			} else {
				runner.Reply("systemctl show containerd --property=ActiveEnterTimestamp --value --timestamp=unix", Output{ExitCode: 1, Stderr: []byte("Unknown option --timestamp\n")})
				runner.Reply("systemctl show containerd --property=ActiveEnterTimestamp --value", Output{Stdout: []byte(tc.started + "\n")})
			}
			v := &verification{}
			v.checkRuntimeRestarted(context.Background(), h, cfg)
			got := strings.Join(v.problems, "\n")
			if tc.problem == "" && got != "" || tc.problem != "" && !strings.Contains(got, tc.problem) {
				t.Errorf("problems %q, want %q", got, tc.problem)
			}
			if checks := strings.Join(v.checks, "\n"); !strings.Contains(checks, tc.check) {
				t.Errorf("checks %q, want %q", checks, tc.check)
			}
		})
	}
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
