package bootstrap

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// DefaultCDISpecPath is where `nvidia-ctk cdi generate --output` is usually
// pointed, and a directory every CDI-aware engine (containerd, CRI-O,
// Docker, Podman) reads by default.
const DefaultCDISpecPath = "/etc/cdi/nvidia.yaml"

// CDIConfig asks for a Container Device Interface spec of the GPUs, so a
// container can ask for nvidia.com/gpu=0, =GPU-<uuid> or =all.
type CDIConfig struct {
	Enabled  bool   `json:"enabled"`
	SpecPath string `json:"spec_path,omitempty"` // default /etc/cdi/nvidia.yaml
}

// specPath is the configured spec path or the default.
func (c CDIConfig) specPath() string {
	if c.SpecPath == "" {
		return DefaultCDISpecPath
	}
	return c.SpecPath
}

func (c *CDIConfig) validate(field string) []error {
	if c.SpecPath == "" {
		return nil
	}
	var errs []error
	switch {
	case !path.IsAbs(c.SpecPath):
		errs = append(errs, fieldError(field+".spec_path", "%q is not an absolute path; use e.g. %s", c.SpecPath, DefaultCDISpecPath))
	case path.Clean(c.SpecPath) != c.SpecPath:
		errs = append(errs, fieldError(field+".spec_path", "%q is not a clean path; write %s", c.SpecPath, path.Clean(c.SpecPath)))
	}
	switch strings.ToLower(filepath.Ext(c.SpecPath)) {
	case ".yaml", ".yml", ".json":
	default:
		// The CDI registry loads only *.yaml and *.json files from its spec
		// directories; any other name would be silently ignored.
		errs = append(errs, fieldError(field+".spec_path", "%q must end in .yaml or .json, or container engines will not load it", c.SpecPath))
	}
	return errs
}

// cdiStep writes the CDI spec of the GPUs NVML lists, as `nvidia-ctk cdi
// generate` would (see cdi_spec.go for what is generated and where it
// deliberately differs).
//
// One spec owns the nvidia.com/gpu devices (cdi_refresh.go): while NVIDIA's
// nvidia-cdi-refresh (toolkit 1.18+) runs at boot and has written its spec
// it owns them, and the step writes no spec and removes its own earlier
// one; otherwise the step's spec does. The step follows nvidia-container-runtime's mode
// (toolkit_mode.go): in every mode the file serves the CDI requests the
// engine resolves; mode "cdi" also reads it, so it must lie in the
// runtime's spec-dirs; "jit-cdi" (the default from 1.18) needs no file for
// containers that use the nvidia runtime. The plan says which spec owns the
// devices (Host.Note) whenever the refresh is installed.
type cdiStep struct{ cfg CDIConfig }

func newCDIStep(cfg CDIConfig) Step { return cdiStep{cfg: cfg} }

func (cdiStep) Name() string { return "cdi" }

// Plan generates the spec from the GPUs and the driver files under the root
// and compares it with the file on disk by meaning, not bytes: a spec that
// differs only in formatting or comments is left alone. Without a driver it
// plans the spec "after the driver is installed" when the driver step has
// work pending, and fails otherwise.
func (s cdiStep) Plan(ctx context.Context, h *Host) ([]Change, error) {
	target := s.cfg.specPath()
	mode, err := readNvidiaRuntimeMode(ctx, h)
	if err != nil {
		return nil, err
	}
	refresh := readCDIRefresh(h)
	outputProblem := ""
	if refresh.owns() {
		outputProblem = refreshOutputProblem(h, refresh.output)
	}
	if refresh.owns() && outputProblem == "" {
		if mode.resolved == runtimeModeCDI && !inSpecDirs(refresh.output, mode.specDirs) {
			h.Warn("%s sets mode = %q, and nvidia-container-runtime then reads CDI specs from %s only, not from %s where nvidia-cdi-refresh writes: add %s to [nvidia-container-runtime.modes.cdi] spec-dirs", mode.file, mode.set, strings.Join(mode.specDirs, ", "), refresh.output, path.Dir(refresh.output))
		}
		return s.stepAside(h, target, refresh)
	}
	if refresh.owns() {
		// Keeping ours is safe: once the refresh writes, the next plan
		// steps aside (a spec in /var/run/cdi wins over /etc/cdi meanwhile).
		h.Warn("nvidia-cdi-refresh is enabled but %s %s: systemctl status %s (gpu-bootstrap keeps its spec %s until the refresh writes one)", refresh.output, outputProblem, cdiRefreshService, target)
	}
	if err := sameDirectoryConflict(h, target, refresh); err != nil {
		return nil, err
	}
	if h.Pending("toolkit") {
		h.Note("the toolkit step installs the NVIDIA Container Toolkit first; its packages enable nvidia-cdi-refresh (1.20 and later; 1.18 and 1.19 only when installed on a running system), which then keeps %s and owns the nvidia.com/gpu devices once it has written it; until then gpu-bootstrap keeps its own spec (apply plans this step after installing the toolkit)", cdiRefreshOutput)
	}
	if mode.resolved == runtimeModeCDI && !inSpecDirs(target, mode.specDirs) {
		return nil, fieldError("cdi.spec_path", "%s is not in a directory nvidia-container-runtime reads in its cdi mode (%s sets mode = %q; [nvidia-container-runtime.modes.cdi] spec-dirs is %s), so GPU containers would find no devices: put the spec in one of those directories, or add %s to spec-dirs",
			target, mode.file, mode.set, strings.Join(mode.specDirs, ", "), path.Dir(target))
	}
	snap, err := h.Snapshot()
	if err != nil {
		return nil, err
	}
	if !snap.Driver.Loaded {
		if h.Pending("driver") {
			return []Change{afterDriverChange(s, fmt.Sprintf("write the CDI spec %s after the driver is installed", target))}, nil
		}
		return nil, fmt.Errorf("the CDI spec lists the driver's devices and libraries, so it needs the NVIDIA driver: %s; configure the driver section or install the driver first", noDriverReason(snap.Driver.Reason))
	}
	if why := refresh.notRunningAtBoot(); why != "" {
		h.Note("gpu-bootstrap's spec %s owns the nvidia.com/gpu devices: %s", target, why)
	}
	if stale := refreshedSpec(h, target, refresh.output); stale != "" && !refresh.owns() {
		h.Warn("%s", staleSpecWarning(stale, target, refresh))
	}
	spec, err := generateCDISpec(h, snap)
	if err != nil {
		return nil, err
	}
	want, err := encodeCDISpec(spec, target)
	if err != nil {
		return nil, err
	}
	old, exists, err := h.ReadFile(target)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", target, err)
	}
	if exists {
		current, err := decodeCDISpec(target, old)
		if err != nil {
			return nil, err
		}
		if sameCDISpec(current, spec) {
			return nil, nil
		}
	}
	verb := "write"
	if exists {
		verb = "update"
	}
	note := fmt.Sprintf("containers can now ask for %s=all (or =0, =GPU-<uuid>); the spec lists the GPUs as they are now, so run apply again after changing GPUs, MIG mode or the driver", spec.Kind)
	if mode.resolved == runtimeModeJitCDI {
		note += fmt.Sprintf("; nvidia-container-runtime runs in jit-cdi mode (%s), so containers that use the nvidia runtime get an in-memory spec made when they start, and this file serves the CDI requests the engine resolves", modeOrigin(mode))
	}
	return []Change{{
		Summary: fmt.Sprintf("%s the CDI spec %s (%s: %d GPUs, driver %s)", verb, target, spec.Kind, len(snap.Devices), snap.Driver.Version),
		Ops:     []Op{FileOp{File: &FileChange{Path: target, Old: old, New: want, Mode: 0o644}}},
		Note:    note,
	}}, nil
}

// stepAside is the plan while nvidia-cdi-refresh owns the devices (see
// cdi_refresh.go): no spec of ours, and a spec ours from before removed.
func (s cdiStep) stepAside(h *Host, target string, refresh cdiRefresh) ([]Change, error) {
	h.Note("nvidia-cdi-refresh owns the nvidia.com/gpu devices: it is enabled (%s) and writes %s at boot and when the driver or the toolkit changes, so gpu-bootstrap writes no second spec (to make gpu-bootstrap the owner instead: systemctl disable --now %s %s)",
		refresh.unit, refresh.output, cdiRefreshPath, cdiRefreshService)
	if sameSpecFile(target, refresh.output) {
		return nil, nil
	}
	old, exists, err := h.ReadFile(target)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", target, err)
	}
	if !exists {
		return nil, nil
	}
	current, err := decodeCDISpec(target, old)
	if err != nil {
		return nil, err
	}
	if current.Kind != cdiKind {
		return nil, nil
	}
	return []Change{{
		Summary: fmt.Sprintf("remove the CDI spec %s: nvidia-cdi-refresh's %s defines the same %s devices, and CDI would load both", target, refresh.output, cdiKind),
		Ops:     []Op{RemoveOp{Path: target}},
	}}, nil
}

// modeOrigin says where the runtime's mode comes from.
func modeOrigin(m nvidiaRuntimeMode) string {
	switch {
	case m.file == "":
		return "no " + nvidiaRuntimeConfig + ", so the default mode auto"
	case m.set == "" || m.set == runtimeModeAuto:
		return m.file + " leaves mode at auto"
	}
	return m.file + " sets mode = \"" + m.set + "\""
}

// refreshedSpec is a spec of the nvidia.com/gpu devices that
// nvidia-cdi-refresh left at output or its default paths, when one is there
// and it is neither target nor in target's directory (sameDirectoryConflict
// refuses that).
func refreshedSpec(h *Host, target, output string) string {
	for _, p := range []string{output, cdiRefreshOutput, "/run/cdi/nvidia.yaml"} {
		if sameSpecFile(p, target) || sameSpecFile(path.Dir(p), path.Dir(target)) {
			continue
		}
		if refreshOutputProblem(h, p) == "" {
			return p
		}
	}
	return ""
}

// staleSpecWarning says that stale, a spec the refresh wrote while it ran,
// defines the devices of target too, and for how long, by its directory:
// only /var/run (a tmpfs, the same as /run) empties at reboot.
func staleSpecWarning(stale, target string, refresh cdiRefresh) string {
	who := "left by nvidia-cdi-refresh, which no longer runs"
	if refresh.unit != "" && refresh.masked == "" && refresh.pathEnabled {
		who = "written by nvidia-cdi-refresh, which runs here only when the driver or the toolkit changes, not at boot"
	}
	msg := fmt.Sprintf("%s (%s) defines the same %s devices", stale, who, cdiKind)
	switch {
	case inVarRun(stale) && !inVarRun(target):
		msg += fmt.Sprintf(", and CDI reads /var/run/cdi after /etc/cdi, so it wins over %s until the next reboot empties /var/run", target)
	case inVarRun(stale):
		msg += fmt.Sprintf(" as %s until the next reboot empties /var/run", target)
	default:
		msg += fmt.Sprintf(" as %s, and %s does not empty at reboot", target, path.Dir(stale))
	}
	return msg + fmt.Sprintf(": remove it (rm %s)", stale)
}

// inVarRun reports whether p lies under /var/run (or /run, the same tmpfs).
func inVarRun(p string) bool {
	p = path.Clean(p)
	return strings.HasPrefix(p, "/run/") || strings.HasPrefix(p, "/var/run/")
}

// sameDirectoryConflict refuses a spec of ours beside the refresh's in one
// directory: CDI treats a device name two specs of one directory both define
// as a conflict and drops it (tags.cncf.io/container-device-interface
// pkg/cdi cache.go refresh, "conflicting device"), so every nvidia.com/gpu
// device would be gone; outside /var/run the other file also survives a
// reboot. It applies while the refresh's file is there, or while the
// refresh runs at boot and will write it.
func sameDirectoryConflict(h *Host, target string, refresh cdiRefresh) error {
	for _, output := range []string{refresh.output, cdiRefreshOutput, "/run/cdi/nvidia.yaml"} {
		if sameSpecFile(output, target) || !sameSpecFile(path.Dir(output), path.Dir(target)) {
			continue
		}
		exists := refreshOutputProblem(h, output) != "does not exist"
		willWrite := refresh.owns() && output == refresh.output
		if !exists && !willWrite {
			continue
		}
		fix := fmt.Sprintf("set cdi.spec_path to %s", output)
		if exists {
			fix = fmt.Sprintf("remove the stale one (rm %s, or rm %s and set cdi.spec_path to %s)", output, target, output)
		}
		from := ""
		if !sameSpecFile(output, cdiRefreshOutput) {
			from = fmt.Sprintf(" (NVIDIA_CTK_CDI_OUTPUT_FILE_PATH, %s)", cdiRefreshEnvFile)
		}
		lasts := ""
		if !inVarRun(output) {
			lasts = fmt.Sprintf(", and %s does not empty at reboot", path.Dir(output))
		}
		return fieldError("cdi.spec_path", "%s and nvidia-cdi-refresh's %s%s lie in one directory, %s; CDI treats the nvidia.com/gpu devices both define as conflicting and drops them all%s: %s",
			target, output, from, path.Dir(target), lasts, fix)
	}
	return nil
}

// noDriverReason is the snapshot's reason, or a generic one.
func noDriverReason(reason string) string {
	if reason == "" {
		return "no NVIDIA driver loaded"
	}
	return reason
}
