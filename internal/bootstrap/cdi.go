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
	if refreshed := refreshedSpec(h, target); refreshed != "" {
		note += fmt.Sprintf("; NVIDIA's nvidia-cdi-refresh (container toolkit 1.18 and later) also keeps %s, which CDI reads after /etc/cdi and which wins for the same device names: keep one spec (cdi.spec_path: %s, or cdi.enabled: false)", refreshed, refreshed)
	}
	return []Change{{
		Summary: fmt.Sprintf("%s the CDI spec %s (%s: %d GPUs, driver %s)", verb, target, spec.Kind, len(snap.Devices), snap.Driver.Version),
		Ops:     []Op{FileOp{File: &FileChange{Path: target, Old: old, New: want, Mode: 0o644}}},
		Note:    note,
	}}, nil
}

// refreshedSpec is the spec NVIDIA's nvidia-cdi-refresh unit keeps in the
// dynamic CDI directory, when there is one and it is not target.
func refreshedSpec(h *Host, target string) string {
	for _, path := range []string{"/var/run/cdi/nvidia.yaml", "/run/cdi/nvidia.yaml"} {
		if path != target && h.Exists(path) {
			return path
		}
	}
	return ""
}

// noDriverReason is the snapshot's reason, or a generic one.
func noDriverReason(reason string) string {
	if reason == "" {
		return "no NVIDIA driver loaded"
	}
	return reason
}
