package bootstrap

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// checkRuntimeRestarted finds an engine that runs an older config than the
// one on disk: the runtime step wrote the nvidia runtime, nobody restarted
// the engine, and every GPU container still fails. The engine's start time
// comes from systemd (ActiveEnterTimestamp), the config's from the newest
// modification time of its main file and drop-ins. Verify calls it on a
// live root only (an image's engine is not running); when the engine does not
// run under systemd nothing is said.
func (v *verification) checkRuntimeRestarted(ctx context.Context, h *Host, cfg *RuntimeConfig) {
	if cfg == nil {
		return
	}
	engine, _, err := resolveEngine(h, cfg.Engine)
	if err != nil {
		return
	}
	path, _, err := engine.mainConfig(h, cfg.ConfigPath)
	if err != nil {
		return
	}
	files := engine.configFiles(h, path)
	// The unit that runs the engine with this config: containerd, or for
	// a config k3s or RKE2 generate, whichever of their units runs.
	var service string
	var started time.Time
	for _, unit := range engine.runningServices(h, path) {
		if t, ok := serviceStartTime(ctx, h, unit); ok {
			service, started = unit, t
			break
		}
	}
	if service == "" {
		return
	}
	newest, newestFile := time.Time{}, ""
	for _, pattern := range files {
		matches, _ := filepath.Glob(h.Path(pattern))
		for _, match := range matches {
			if info, err := os.Stat(match); err == nil && info.ModTime().After(newest) {
				newest, newestFile = info.ModTime(), match
			}
		}
	}
	if newestFile == "" {
		return
	}
	if newest.After(started) {
		v.problem("runtime: %s changed at %s, after %s started (%s): restart it to load the nvidia runtime (systemctl restart %s, or gpu-bootstrap apply --restart-runtime)",
			newestFile, newest.UTC().Format(time.RFC3339), service, started.UTC().Format(time.RFC3339), service)
		return
	}
	v.check("runtime: %s started after its config last changed", service)
}

// serviceStartTime asks systemd when a unit last became active; false when
// it is not running or systemd cannot say. --timestamp=unix (systemd 248 and
// later) prints "@<seconds>"; older systemd prints "Sun 2026-11-22 08:00:00
// UTC".
func serviceStartTime(ctx context.Context, h *Host, service string) (time.Time, bool) {
	args := []string{"show", service, "--property=ActiveEnterTimestamp", "--value"}
	out, err := h.Runner.Run(ctx, Command{Root: "/", Name: "systemctl", Args: append(args, "--timestamp=unix")})
	if err != nil {
		if out, err = h.Runner.Run(ctx, Command{Root: "/", Name: "systemctl", Args: args}); err != nil {
			return time.Time{}, false
		}
	}
	value := strings.TrimSpace(string(out.Stdout))
	if seconds, ok := strings.CutPrefix(value, "@"); ok {
		n, err := strconv.ParseInt(seconds, 10, 64)
		if err != nil || n == 0 {
			return time.Time{}, false
		}
		return time.Unix(n, 0), true
	}
	started, err := time.Parse("Mon 2006-01-02 15:04:05 MST", value)
	if err != nil {
		return time.Time{}, false
	}
	return started, true
}
