package bootstrap

import (
	"context"
	"fmt"
	"path"
	"slices"

	"github.com/gpuinfra/terraform-provider-gpu/internal/tomledit"
)

// nvidia-container-runtime reads its mode from
// /etc/nvidia-container-runtime/config.toml (NVIDIA/nvidia-container-toolkit
// v1.20.1 api/config/v1/runtime.go RuntimeConfig):
//
//	[nvidia-container-runtime]
//	mode = "auto"                  # legacy, csv, cdi, jit-cdi or auto
//
//	[nvidia-container-runtime.modes.cdi]
//	spec-dirs = ["/etc/cdi", "/var/run/cdi"]
//
// The default is "auto" (api/config/v1/config.go GetDefault, in 1.17 and
// 1.18+ alike), and what auto resolves to changed with 1.18
// (internal/info/auto.go ResolveRuntimeMode): "cdi" for a container that asks
// only for fully qualified CDI names, else by platform — "csv" on Tegra,
// otherwise the default mode, which is "jit-cdi" from v1.18.0 and was
// "legacy" up to v1.17.x. The modes:
//
//   - legacy: the runtime adds nvidia-container-runtime-hook, which asks
//     nvidia-container-cli for the devices; no CDI spec involved.
//   - csv (Tegra): an in-memory spec from the CSV files.
//   - cdi: the runtime applies CDI devices from the specs in
//     modes.cdi.spec-dirs, as an engine would: a spec file must be there.
//   - jit-cdi: the runtime generates an in-memory spec for the devices a
//     container asks for (NVIDIA_VISIBLE_DEVICES) when it starts; no file
//     is read.
//
// What the cdi step does with each (chosen, from the above): the spec file
// is for CDI requests the engine resolves itself (containerd, CRI-O, Docker
// and Podman read /etc/cdi and /var/run/cdi; --device nvidia.com/gpu=all,
// the device plugin's cdi-cri / cdi-annotations strategies) in every mode,
// so the step writes it in every mode (unless nvidia-cdi-refresh owns the
// devices, cdi_refresh.go). With mode "cdi" the runtime reads the same
// file, so a spec outside modes.cdi.spec-dirs is a plan error for
// cdi.spec_path. With "jit-cdi" (or "auto" resolving to it) the plan notes
// that containers using the nvidia runtime need no file, so a spec that is
// stale after a driver upgrade only affects engine-side CDI requests.
const nvidiaRuntimeConfig = "/etc/nvidia-container-runtime/config.toml"

// Runtime modes (internal/info/auto.go).
const (
	runtimeModeAuto   = "auto"
	runtimeModeLegacy = "legacy"
	runtimeModeCSV    = "csv"
	runtimeModeCDI    = "cdi"
	runtimeModeJitCDI = "jit-cdi"
)

// nvidiaRuntimeMode is the mode nvidia-container-runtime runs GPU
// containers in on this root.
type nvidiaRuntimeMode struct {
	set      string   // config.toml's mode; "" when the file or key is absent
	resolved string   // what the runtime uses for a container asking by NVIDIA_VISIBLE_DEVICES
	specDirs []string // modes.cdi.spec-dirs, or CDI's defaults
	file     string   // the config file, "" when absent
}

// readNvidiaRuntimeMode reads config.toml. A file that does not parse is a
// *ParseError: nvidia-container-runtime would fail every container on it.
func readNvidiaRuntimeMode(ctx context.Context, h *Host) (nvidiaRuntimeMode, error) {
	m := nvidiaRuntimeMode{specDirs: defaultCDISpecDirs}
	f, err := readConfigFile(h, nvidiaRuntimeConfig)
	if err != nil {
		return m, err
	}
	var doc *tomledit.Doc
	if f.exists {
		m.file = f.path
		if doc, err = parseTOMLFile(f); err != nil {
			return m, err
		}
		if v, ok := doc.Get("nvidia-container-runtime", "mode"); ok {
			s, isText := v.(string)
			if !isText {
				return m, fmt.Errorf("%s: [nvidia-container-runtime] mode = %v is not text; nvidia-container-runtime reads one of %q", f.path, v, []string{runtimeModeAuto, runtimeModeJitCDI, runtimeModeCDI, runtimeModeLegacy, runtimeModeCSV})
			}
			m.set = s
		}
		if v, ok := doc.Get("nvidia-container-runtime", "modes", "cdi", "spec-dirs"); ok {
			if dirs, ok := stringList(v); ok {
				m.specDirs = dirs
			}
		}
	}
	switch m.set {
	case "", runtimeModeAuto:
		// NVML platform (the cdi step needs NVML's GPUs): the default mode.
		// Which default: toolkit 1.18's, unless an older toolkit is
		// installed.
		m.resolved = runtimeModeJitCDI
		older, err := before118(ctx, h)
		if err != nil {
			return m, err
		}
		if older {
			m.resolved = runtimeModeLegacy
		}
	default:
		m.resolved = m.set
	}
	return m, nil
}

// before118 reports whether the toolkit installed under the root is older
// than 1.18, from installedToolkit's nvidia-container-toolkit-base (the
// package with nvidia-container-runtime, whose mode this is); false when
// none is installed or its version does not parse (the newest toolkit's
// behavior is assumed).
func before118(ctx context.Context, h *Host) (bool, error) {
	installed, err := installedToolkit(ctx, h, "nvidia-container-toolkit-base")
	if err != nil || installed == "" {
		return false, err
	}
	v, ok := parseEngineVersion(" " + installed)
	return ok && !v.atLeast(1, 18), nil
}

// installedToolkit is the one home for "which toolkit is installed": the
// version of pkg (one of toolkitPackages, which NVIDIA releases together at
// one version) the package database lists installed, "" when none. rpm is
// asked on the systems the toolkit step installs with dnf (AL2023, RHEL and
// rebuilds), dpkg's status file read otherwise (a root whose os-release this
// cannot classify falls back to dpkg's, as before).
func installedToolkit(ctx context.Context, h *Host, pkg string) (string, error) {
	if distro, err := readDistro(h); err == nil && (distro.Family == familyAL2023 || distro.Family == familyRHEL) {
		return rpmQuery(ctx, h, pkg, "%{VERSION}-%{RELEASE}")
	}
	status, err := readDpkgStatus(h)
	if err != nil {
		return "", err
	}
	if p := status[pkg]; p.Installed() {
		return p.Version, nil
	}
	return "", nil
}

// inSpecDirs reports whether spec lies directly in one of dirs (CDI does
// not descend into subdirectories; /var/run and /run are one).
func inSpecDirs(spec string, dirs []string) bool {
	dir := path.Dir(path.Clean(spec))
	return slices.ContainsFunc(dirs, func(d string) bool { return sameSpecFile(d, dir) })
}
