package bootstrap

import (
	"context"
	"path/filepath"
	"strings"
)

// containerEngine is everything the bootstrap knows about one container
// engine, in one place, as nvidia-container-toolkit's pkg/config/engine
// keeps one Interface per engine: the runtime step plans through it, auto
// detection probes it, and Verify reads its service and files from it. A new
// engine is a new entry in containerEngines and a runtime_<engine>.go with
// its plan; nothing else switches on the engine's name.
//
// "engine" in this package means a container engine only; the plan/apply
// machinery is the plan (plan.go, apply.go).
type containerEngine struct {
	// name is runtime.engine's value for it, and the command whose
	// --version its plan reads (probeVersion(ctx, h, name): containerd and
	// CRI-O choose a config schema and check CDI support by it).
	name string
	// service is the systemd unit that must restart to load a new config.
	service string
	// defaultConfig is its main config file when runtime.config_path is
	// not set.
	defaultConfig string
	// installed are files whose presence under the root shows the engine is
	// installed (binaries, then configs); detect reads them.
	installed []string
	// plan returns the changes that make the engine know the nvidia runtime
	// (runtime_containerd.go, runtime_docker.go, runtime_crio.go).
	plan func(ctx context.Context, h *Host, want runtimeWant) ([]Change, error)
	// configFiles are the files (or glob patterns) the engine reads its
	// config from, in the order it merges them, later winning; Verify's
	// restart check compares their modification times with the service's
	// start.
	configFiles func(h *Host, configPath string) []string
	// loaded asks the running engine which runtimes it loaded (Verify, on
	// a live root); false when it cannot be asked.
	loaded func(ctx context.Context, h *Host) (loadedRuntimes, bool)
	// hiddenBy says that evidence of this engine belongs to another one
	// found beside it (containerd installed as Docker's backend); nil when
	// it never does.
	hiddenBy func(h *Host, found map[string]string) bool
}

// containerEngines are the engines runtime.engine names, in the order
// errors list them.
var containerEngines = []containerEngine{
	{
		name:          engineContainerd,
		service:       "containerd",
		defaultConfig: defaultContainerdConfig,
		installed:     []string{"/usr/bin/containerd", "/usr/local/bin/containerd", defaultContainerdConfig},
		plan:          planContainerd,
		configFiles:   containerdConfigFiles,
		loaded:        containerdLoaded,
		// Docker installs containerd as well (with the CRI plugin disabled
		// in /etc/containerd/config.toml, or without that file): such a
		// containerd counts as part of Docker.
		hiddenBy: func(h *Host, found map[string]string) bool {
			return found[engineDocker] != "" && !containerdServesCRI(h)
		},
	},
	{
		name:          engineDocker,
		service:       "docker",
		defaultConfig: defaultDockerConfig,
		installed:     []string{"/usr/bin/dockerd", "/usr/local/bin/dockerd", defaultDockerConfig},
		plan:          planDocker,
		loaded:        dockerLoaded,
		configFiles: func(_ *Host, configPath string) []string {
			return []string{configPathOr(configPath, defaultDockerConfig)}
		},
	},
	{
		name:          engineCRIO,
		service:       "crio",
		defaultConfig: defaultCRIOConfig,
		installed:     []string{"/usr/bin/crio", "/usr/local/bin/crio", defaultCRIOConfig, "/etc/crio/crio.conf.d"},
		plan:          planCRIO,
		loaded:        crioLoaded,
		configFiles: func(h *Host, configPath string) []string {
			path := configPathOr(configPath, defaultCRIOConfig)
			dir := crioDropInDir(path)
			eff, _, err := crioEffective(h, path, dir, filepath.Join(dir, crioDropInName))
			if err != nil {
				return []string{path, filepath.Join(dir, "*")}
			}
			return eff.paths()
		},
	},
}

// engineNamed is the engine runtime.engine names; an unknown name is an
// error for runtime.engine.
func engineNamed(name string) (*containerEngine, error) {
	for i := range containerEngines {
		if containerEngines[i].name == name {
			return &containerEngines[i], nil
		}
	}
	return nil, fieldError("runtime.engine", "%q is not a container engine; use one of %s", name, strings.Join(runtimeEngines, ", "))
}

// resolveEngine is the engine a runtime config means: the one named, or
// for auto the one found under the root and the file that showed it.
func resolveEngine(h *Host, name string) (engine *containerEngine, evidence string, err error) {
	if name == engineAuto {
		if name, evidence, err = detectEngine(h); err != nil {
			return nil, "", err
		}
	}
	engine, err = engineNamed(name)
	return engine, evidence, err
}

// detect is the first of the engine's installed files found under the
// root, "" when none is.
func (e *containerEngine) detect(h *Host) string {
	for _, p := range e.installed {
		if h.Exists(p) {
			return p
		}
	}
	return ""
}
