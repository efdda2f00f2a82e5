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
// machinery is step.go (Step, Change, MakePlan), apply_ops.go (a change's
// ops) and apply.go (Apply).
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
	// locate finds its main config under the root when runtime.config_path
	// is not set: path, and what showed it for the plan ("" when it is
	// defaultConfig as usual); nil means defaultConfig. containerd's is
	// k3s's or RKE2's generated config where they run it embedded
	// (runtime_containerd_embedded.go).
	locate func(h *Host) (path, found string, err error)
	// services are the systemd units that may run the engine with the
	// config at configPath, the likeliest first; Verify's restart check
	// uses the first that runs. nil means just service.
	services func(h *Host, configPath string) []string
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
		// k3s's and RKE2's generated configs show their embedded
		// containerd, which has no binary on the usual paths; they come
		// first, so that beside Docker's containerd the evidence named is
		// the containerd Kubernetes uses.
		installed: append(embeddedContainerdConfigs(), "/usr/bin/containerd", "/usr/local/bin/containerd", defaultContainerdConfig),
		plan:      planContainerd,
		// A generated config's template counts: k3s renders it into the
		// config at its next start.
		configFiles: func(h *Host, configPath string) []string {
			files := containerdConfigFiles(h, configPath)
			if _, template, ok := containerdGeneratedServices(h, configPathOr(configPath, defaultContainerdConfig)); ok && template != "" {
				files = append(files, template)
			}
			return files
		},
		loaded: containerdLoaded,
		locate: containerdMainConfig,
		services: func(h *Host, configPath string) []string {
			if units, _, ok := containerdGeneratedServices(h, configPath); ok {
				return units
			}
			return []string{"containerd"}
		},
		// Docker installs containerd as well (with the CRI plugin disabled
		// in /etc/containerd/config.toml, or without that file): such a
		// containerd counts as part of Docker, unless k3s or RKE2 runs one
		// of its own beside it.
		hiddenBy: func(h *Host, found map[string]string) bool {
			return found[engineDocker] != "" && !containerdServesCRI(h) && !containerdRunsEmbedded(h)
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

// mainConfig is the engine's main config: runtime.config_path when set,
// else the one locate finds, else defaultConfig; found is what locate says
// showed it ("" when nothing needs saying).
func (e *containerEngine) mainConfig(h *Host, configPath string) (path, found string, err error) {
	if configPath != "" {
		return configPath, "", nil
	}
	if e.locate == nil {
		return e.defaultConfig, "", nil
	}
	return e.locate(h)
}

// runningServices are the units that may run the engine with the config
// at configPath (containerEngine.services).
func (e *containerEngine) runningServices(h *Host, configPath string) []string {
	if e.services == nil {
		return []string{e.service}
	}
	return e.services(h, configPath)
}
