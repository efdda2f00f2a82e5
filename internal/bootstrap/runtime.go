package bootstrap

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// RuntimeConfig makes a container engine know the nvidia runtime
// (nvidia-container-runtime), optionally as its default runtime and with
// the engine's CDI support turned on. What it writes per engine:
//
//   - containerd: the runtime in the CRI plugin of /etc/containerd/config.toml
//     (config version 1, 2 or 3), or in the drop-in conf.d/99-nvidia.toml when
//     the config imports drop-ins and containerd merges them (2.0 and later);
//     see runtime_containerd.go.
//   - docker: "runtimes", "default-runtime" and "features" in
//     /etc/docker/daemon.json; see runtime_docker.go.
//   - crio: the drop-in /etc/crio/crio.conf.d/99-nvidia.conf (without the
//     runtime's table where nvidia-ctk's 99-nvidia.toml defines it); see
//     runtime_crio.go.
//
// Every edit keeps the rest of the file as it was (comments, key order,
// other runtimes), and the engine must restart to pick it up.
//
// The engines merge several files, so the plan is made against the config
// the engine ends up with (runtime_effective.go): set_as_default: false
// removes a default of nvidia from whichever file sets it, and a file read
// after ours that overrides the nvidia runtime's binary or the default, or
// a containerd whose CRI plugin is disabled (Docker's packaging), is an
// error naming the file.
//
// NVIDIA Container Toolkit 1.18 and later write the runtime as a drop-in
// (`nvidia-ctk runtime configure`, drop-in mode by default): containerd's
// conf.d/99-nvidia.toml, imported from config.toml, and CRI-O's
// crio.conf.d/99-nvidia.toml. Where such a file already defines the nvidia
// runtime with our binary, the step never adds a second one: containerd's
// is edited where it is (containerdRuntimeHolder), CRI-O's is left to hold
// the runtime, our 99-nvidia.conf keeping only what it does not set
// (crioRuntimeHolder). The plan notes which file holds the runtime. A generated containerd config (k3s, RKE2: "DO NOT EDIT") is
// configured through the template it is generated from
// (runtime_containerd_k3s.go), and found without runtime.config_path where
// k3s or RKE2 runs it (runtime_containerd_embedded.go). Per-engine facts live in one table,
// containerEngines (runtime_engine.go).
type RuntimeConfig struct {
	// Engine is containerd, docker, crio, or auto (the one found under the
	// root: see detectEngine).
	Engine string `json:"engine"`
	// SetAsDefault makes nvidia the engine's default runtime. When false,
	// nvidia is made not the default: a default left on "nvidia" (by an
	// earlier run or nvidia-ctk --set-as-default) is removed, so the engine
	// falls back to its own default (runc, or crun for CRI-O).
	SetAsDefault bool `json:"set_as_default,omitempty"`
	// EnableCDI turns on the engine's CDI device injection where it is not
	// on by default (containerd before 2.0, Docker before 28.2; CRI-O 1.24
	// and later always has it).
	EnableCDI bool `json:"enable_cdi,omitempty"`
	// ConfigPath is the engine's main config file when not the usual one
	// (/etc/containerd/config.toml, /etc/docker/daemon.json,
	// /etc/crio/crio.conf). Drop-ins go next to it.
	ConfigPath string `json:"config_path,omitempty"`
	// RuntimePath is the nvidia runtime binary; default
	// /usr/bin/nvidia-container-runtime.
	RuntimePath string `json:"runtime_path,omitempty"`
}

const (
	engineContainerd = "containerd"
	engineDocker     = "docker"
	engineCRIO       = "crio"
	engineAuto       = "auto"

	// nvidiaRuntime is the runtime's name in the engine; Kubernetes
	// RuntimeClasses (handler: nvidia) and `docker run --runtime nvidia`
	// refer to it.
	nvidiaRuntime            = "nvidia"
	defaultNvidiaRuntimePath = "/usr/bin/nvidia-container-runtime"
)

var runtimeEngines = []string{engineContainerd, engineDocker, engineCRIO, engineAuto}

func (c *RuntimeConfig) validate(field string) []error {
	var errs []error
	switch {
	case c.Engine == "":
		errs = append(errs, fieldError(field+".engine", "missing; set it to one of %s", strings.Join(runtimeEngines, ", ")))
	case !slices.Contains(runtimeEngines, c.Engine):
		errs = append(errs, fieldError(field+".engine", "%q is not a container engine; use one of %s", c.Engine, strings.Join(runtimeEngines, ", ")))
	}
	if c.ConfigPath != "" {
		if !filepath.IsAbs(c.ConfigPath) {
			errs = append(errs, fieldError(field+".config_path", "%q is not an absolute path; give the engine's config file, e.g. /etc/containerd/config.toml", c.ConfigPath))
		} else if c.Engine == engineAuto {
			errs = append(errs, fieldError(field+".config_path", "a config file needs a known engine; set %s.engine to containerd, docker or crio", field))
		}
	}
	if c.RuntimePath != "" && !filepath.IsAbs(c.RuntimePath) {
		errs = append(errs, fieldError(field+".runtime_path", "%q is not an absolute path; give the nvidia-container-runtime binary, e.g. %s", c.RuntimePath, defaultNvidiaRuntimePath))
	}
	return errs
}

type runtimeStep struct {
	cfg RuntimeConfig
	cdi *CDIConfig
}

func newRuntimeStep(cfg RuntimeConfig, cdi *CDIConfig) Step { return runtimeStep{cfg: cfg, cdi: cdi} }

func (runtimeStep) Name() string { return "runtime" }

// Plan reads the engine's config and returns the file changes that add the
// nvidia runtime; nothing when the config already has it all.
func (s runtimeStep) Plan(ctx context.Context, h *Host) ([]Change, error) {
	engine, detected, err := resolveEngine(h, s.cfg.Engine)
	if err != nil {
		return nil, err
	}
	want := runtimeWant{
		configPath: s.cfg.ConfigPath,
		binary:     s.cfg.RuntimePath,
		setDefault: s.cfg.SetAsDefault,
		enableCDI:  s.cfg.EnableCDI,
		cdiSpecDir: extraCDISpecDir(s.cdi),
	}
	if want.binary == "" {
		want.binary = defaultNvidiaRuntimePath
	}
	if err := checkRuntimeBinary(h, want.binary); err != nil {
		return nil, err
	}
	// An engine found elsewhere than its usual config (k3s's containerd)
	// is planned at that config, and the plan says why.
	path, found, err := engine.mainConfig(h, want.configPath)
	if err != nil {
		return nil, err
	}
	want.configPath = path
	changes, err := engine.plan(ctx, h, want)
	for i := range changes {
		if detected != "" {
			changes[i].Summary += " (engine detected: " + detected + ")"
		}
		if found != "" {
			changes[i].Summary += " (found " + found + ")"
		}
	}
	return changes, err
}

// checkRuntimeBinary refuses to point the engine at a runtime binary that
// is not under the root, unless the toolkit step of this run installs it
// there (it plans before this step, so Host.Pending says whether it will;
// its packages put the runtime at the default path only). An engine whose
// nvidia runtime is missing fails every container that asks for it, which a
// plan should say before anything is written.
func checkRuntimeBinary(h *Host, binary string) error {
	if h.Exists(binary) || h.Pending("toolkit") && binary == defaultNvidiaRuntimePath {
		return nil
	}
	return fieldError("runtime.runtime_path", "%s does not exist under %s, so the nvidia runtime would point at a missing binary: add `toolkit: {install: true}` to the config (or install nvidia-container-toolkit, which puts it at %s), or set runtime.runtime_path to where nvidia-container-runtime is installed",
		binary, rootName(h), defaultNvidiaRuntimePath)
}

// runtimeWant is the desired runtime setup with defaults filled in.
type runtimeWant struct {
	configPath string // "" = the engine's usual main config
	binary     string
	setDefault bool
	enableCDI  bool
	cdiSpecDir string // a CDI spec directory the engine must scan besides its defaults; "" when none
}

// defaultCDISpecDirs are where containerd, Docker and CRI-O look for CDI
// specs unless told otherwise (containerd internal/cri/config
// CDISpecDirs, moby daemon cdi.DefaultSpecDirs, crio.conf(5) cdi_spec_dirs).
var defaultCDISpecDirs = []string{"/etc/cdi", "/var/run/cdi"}

// extraCDISpecDir is the directory of the CDI spec the cdi step writes, when
// the engines do not scan it by default.
func extraCDISpecDir(cdi *CDIConfig) string {
	if cdi == nil || !cdi.Enabled || cdi.SpecPath == "" || !filepath.IsAbs(cdi.SpecPath) {
		return ""
	}
	dir := filepath.Dir(filepath.Clean(cdi.SpecPath))
	if slices.Contains(defaultCDISpecDirs, dir) || dir == "/run/cdi" {
		return ""
	}
	return dir
}

// withSpecDir is dirs (or the defaults when the config sets none) plus dir.
func withSpecDir(dirs []string, set bool, dir string) []string {
	if !set {
		dirs = defaultCDISpecDirs
	}
	if slices.Contains(dirs, dir) {
		return nil
	}
	return append(slices.Clone(dirs), dir)
}

// configFile is one engine config file being planned: its path, what is on
// disk and what it should become.
type configFile struct {
	path   string
	old    []byte
	exists bool
}

// change is the Change that writes data over f, or false when f already
// holds data.
func (f configFile) change(data []byte, summary, restart string) (Change, bool) {
	if f.exists && bytes.Equal(f.old, data) {
		return Change{}, false
	}
	old := f.old
	if f.exists && old == nil {
		old = []byte{}
	}
	return Change{
		Summary: summary,
		Ops:     []Op{FileOp{File: &FileChange{Path: f.path, Old: old, New: data, Mode: 0o644}}},
		Restart: restart,
	}, true
}

// configPathOr is runtime.config_path when set, else the engine's usual
// main config.
func configPathOr(configPath, engineDefault string) string {
	if configPath != "" {
		return configPath
	}
	return engineDefault
}

// readConfigFile reads an engine's config file; a missing one reads as
// empty, with exists false.
func readConfigFile(h *Host, path string) (configFile, error) {
	data, exists, err := h.ReadFile(path)
	if err != nil {
		return configFile{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return configFile{path: path, old: data, exists: exists}, nil
}

// stringList reads a TOML or JSON array of strings; ok is false when v is
// not one.
func stringList(v any) (list []string, ok bool) {
	items, ok := v.([]any)
	if !ok {
		return nil, false
	}
	for _, item := range items {
		s, ok := item.(string)
		if !ok {
			return nil, false
		}
		list = append(list, s)
	}
	return list, true
}

// describeEdits joins what an edit did into a summary.
func describeEdits(verb, path string, did []string) string {
	return fmt.Sprintf("%s %s: %s", verb, path, strings.Join(did, ", "))
}
