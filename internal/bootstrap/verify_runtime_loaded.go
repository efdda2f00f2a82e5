package bootstrap

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/tomledit"
)

// loadedRuntimes is what a running engine says it loaded: its runtimes by
// name and its default runtime.
type loadedRuntimes struct {
	names      []string
	defaultRun string
	source     string // the command asked
}

// checkRunningEngine checks, on a live root, the engine as it runs: that
// it restarted after its config last changed (checkRuntimeRestarted) and
// then that it loaded the nvidia runtime, and as the default when asked
// (checkLoadedRuntimes). Files on disk can be right while the engine runs
// an older config or one that a flag overrides; only the engine can say.
func (v *verification) checkRunningEngine(ctx context.Context, h *Host, cfg *RuntimeConfig) {
	before := len(v.problems)
	v.checkRuntimeRestarted(ctx, h, cfg)
	if len(v.problems) == before {
		v.checkLoadedRuntimes(ctx, h, cfg)
	}
}

// checkLoadedRuntimes asks the running engine which runtimes it loaded;
// when it cannot be asked (not running, no client installed) nothing is
// said.
func (v *verification) checkLoadedRuntimes(ctx context.Context, h *Host, cfg *RuntimeConfig) {
	if cfg == nil {
		return
	}
	engine, _, err := resolveEngine(h, cfg.Engine)
	if err != nil || engine.loaded == nil {
		return
	}
	got, ok := engine.loaded(ctx, h)
	if !ok {
		return
	}
	// The unit to restart: containerd, or k3s / RKE2 for their embedded
	// containerd.
	service := engine.service
	if path, _, err := engine.mainConfig(h, cfg.ConfigPath); err == nil {
		service = engine.runningServices(h, path)[0]
	}
	switch {
	case !slices.Contains(got.names, nvidiaRuntime):
		v.problem("runtime: the running %s has not loaded the nvidia runtime (%s lists %s): restart it (systemctl restart %s), and if that does not help run gpu-bootstrap check for the file that overrides it",
			engine.name, got.source, strings.Join(got.names, ", "), service)
	case cfg.SetAsDefault && got.defaultRun != nvidiaRuntime:
		v.problem("runtime: the running %s's default runtime is %q, not nvidia (%s): a flag or a file it reads overrides set_as_default; restart it or look for --default-runtime in its unit", engine.name, got.defaultRun, got.source)
	case !cfg.SetAsDefault && got.defaultRun == nvidiaRuntime:
		v.problem("runtime: the running %s's default runtime is nvidia although set_as_default is false (%s): restart it, or remove --default-runtime nvidia from its unit", engine.name, got.source)
	default:
		v.check("runtime: the running %s has loaded the nvidia runtime (%s)", engine.name, got.source)
	}
}

// containerdLoaded reads `crictl info`, whose "config" is the CRI plugin's
// config as containerd loaded it (containerd internal/cri/server Status:
// config.containerd.runtimes and defaultRuntimeName).
func containerdLoaded(ctx context.Context, h *Host) (loadedRuntimes, bool) {
	out, err := h.Run(ctx, "crictl", "info")
	if err != nil {
		return loadedRuntimes{}, false
	}
	var info struct {
		Config struct {
			Containerd struct {
				DefaultRuntimeName string                     `json:"defaultRuntimeName"`
				Runtimes           map[string]json.RawMessage `json:"runtimes"`
			} `json:"containerd"`
		} `json:"config"`
	}
	if json.Unmarshal(out.Stdout, &info) != nil || info.Config.Containerd.Runtimes == nil {
		return loadedRuntimes{}, false
	}
	c := info.Config.Containerd
	return loadedRuntimes{names: slices.Sorted(maps.Keys(c.Runtimes)), defaultRun: c.DefaultRuntimeName, source: "crictl info"}, true
}

// dockerLoaded reads `docker info`: Runtimes and DefaultRuntime (moby
// api/types/system Info).
func dockerLoaded(ctx context.Context, h *Host) (loadedRuntimes, bool) {
	out, err := h.Run(ctx, "docker", "info", "--format", "{{json .}}")
	if err != nil {
		return loadedRuntimes{}, false
	}
	var info struct {
		DefaultRuntime string                     `json:"DefaultRuntime"`
		Runtimes       map[string]json.RawMessage `json:"Runtimes"`
	}
	if json.Unmarshal(out.Stdout, &info) != nil || info.Runtimes == nil {
		return loadedRuntimes{}, false
	}
	return loadedRuntimes{names: slices.Sorted(maps.Keys(info.Runtimes)), defaultRun: info.DefaultRuntime, source: "docker info"}, true
}

// crioLoaded reads `crio status config`, the TOML config the running CRI-O
// serves on its socket (crio-status(8)).
func crioLoaded(ctx context.Context, h *Host) (loadedRuntimes, bool) {
	out, err := h.Run(ctx, "crio", "status", "config")
	if err != nil {
		return loadedRuntimes{}, false
	}
	doc, err := tomledit.Parse(out.Stdout)
	if err != nil || !doc.Has("crio", "runtime", "runtimes") {
		return loadedRuntimes{}, false
	}
	seen := map[string]bool{}
	for _, leaf := range doc.Leaves("crio", "runtime", "runtimes") {
		seen[leaf.Path[0]] = true
	}
	def, _ := doc.Get(crioDefaultRuntime...)
	return loadedRuntimes{names: slices.Sorted(maps.Keys(seen)), defaultRun: fmt.Sprint(def), source: "crio status config"}, true
}
