package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// GPUSettingsConfig are optional settings applied to every GPU: compute
// mode, power limit, application clocks and MIG. A setting left out is left
// as the GPU has it.
type GPUSettingsConfig struct {
	// ComputeMode is Default, Exclusive_Process or Prohibited (nvidia-smi's
	// names, any case).
	ComputeMode       string                   `json:"compute_mode,omitempty"`
	PowerLimitWatts   *uint32                  `json:"power_limit_watts,omitempty"`
	ApplicationClocks *ApplicationClocksConfig `json:"application_clocks,omitempty"`
	MIG               *MIGConfig               `json:"mig,omitempty"`
}

// ApplicationClocksConfig are the application clocks to set.
type ApplicationClocksConfig struct {
	MemoryMHz   uint32 `json:"memory_mhz"`
	GraphicsMHz uint32 `json:"graphics_mhz"`
}

// MIGConfig turns MIG on or off and lays out instances.
type MIGConfig struct {
	Enabled bool `json:"enabled"`
	// Profiles are GPU instance profiles, one GPU instance (with one compute
	// instance using all of it) per entry, on every selected GPU: "1g.5gb",
	// "3g.20gb", "1g.10gb+me". Empty leaves the instances as they are.
	Profiles []string `json:"profiles,omitempty"`
	GPUs     []int    `json:"gpus,omitempty"` // indexes to configure; all MIG-capable GPUs when empty
}

// computeModes are the compute modes a config may ask for, as nvidia-smi
// spells them.
var computeModes = []string{nvml.ComputeModeDefault, nvml.ComputeModeExclusiveProcess, nvml.ComputeModeProhibited}

// canonicalComputeMode maps a configured compute mode to nvidia-smi's
// spelling; case does not matter and "-" may stand for "_"
// ("exclusive-process", "EXCLUSIVE_PROCESS").
func canonicalComputeMode(mode string) (string, bool) {
	normalized := strings.ReplaceAll(strings.TrimSpace(mode), "-", "_")
	for _, m := range computeModes {
		if strings.EqualFold(normalized, m) {
			return m, true
		}
	}
	return "", false
}

// computeModeProblem explains a compute mode that is not one of
// computeModes. nvidia-smi -c also takes numbers; the config takes names
// only, so a YAML file says what it means, and the numbers get a hint.
func computeModeProblem(mode string) string {
	valid := "valid values are " + strings.Join(computeModes, ", ")
	switch strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(mode), "-", "_")) {
	case "0":
		return fmt.Sprintf("%q is nvidia-smi's number for Default; write Default (%s)", mode, valid)
	case "2":
		return fmt.Sprintf("%q is nvidia-smi's number for Prohibited; write Prohibited (%s)", mode, valid)
	case "3":
		return fmt.Sprintf("%q is nvidia-smi's number for Exclusive_Process; write Exclusive_Process (%s)", mode, valid)
	case "1":
		return fmt.Sprintf("%q is nvidia-smi's number for Exclusive_Thread, which NVML no longer supports; use Exclusive_Process (%s)", mode, valid)
	case "EXCLUSIVE_THREAD":
		return fmt.Sprintf("%q is no longer supported by NVML; use Exclusive_Process (%s)", mode, valid)
	}
	return fmt.Sprintf("%q is not a compute mode; %s", mode, valid)
}

func (c *GPUSettingsConfig) validate(field string) []error {
	var errs []error
	if c.ComputeMode != "" {
		if _, ok := canonicalComputeMode(c.ComputeMode); !ok {
			errs = append(errs, fieldError(field+".compute_mode", "%s", computeModeProblem(c.ComputeMode)))
		}
	}
	if c.PowerLimitWatts != nil && *c.PowerLimitWatts == 0 {
		errs = append(errs, fieldError(field+".power_limit_watts", "must be a positive number of watts; leave it out to keep the GPU's limit"))
	}
	if ac := c.ApplicationClocks; ac != nil {
		if ac.MemoryMHz == 0 {
			errs = append(errs, fieldError(field+".application_clocks.memory_mhz", "must be set (MHz, one of `nvidia-smi -q -d SUPPORTED_CLOCKS`)"))
		}
		if ac.GraphicsMHz == 0 {
			errs = append(errs, fieldError(field+".application_clocks.graphics_mhz", "must be set (MHz, one of `nvidia-smi -q -d SUPPORTED_CLOCKS`)"))
		}
	}
	if c.MIG != nil {
		errs = append(errs, c.MIG.validate(field+".mig")...)
	}
	return errs
}

// gpuSettingsStep applies GPUSettingsConfig through NVML. Each setting is
// compared with the GPU's snapshot, so GPUs that already match plan nothing.
type gpuSettingsStep struct{ cfg GPUSettingsConfig }

func newGPUSettingsStep(cfg GPUSettingsConfig) Step { return gpuSettingsStep{cfg: cfg} }

func (gpuSettingsStep) Name() string { return "gpu" }

// Plan checks the settings against the GPUs (power limit range, clocks
// within the maximum, MIG-capable GPUs) and plans one change per setting
// for the GPUs that differ: MIG mode and instances first, then compute mode,
// power limit and application clocks.
func (s gpuSettingsStep) Plan(ctx context.Context, h *Host) ([]Change, error) {
	snap, err := h.Snapshot()
	if err != nil {
		return nil, err
	}
	if !snap.Driver.Loaded {
		if h.Pending("driver") {
			return []Change{afterDriverChange(s, "apply the GPU settings after the driver is installed")}, nil
		}
		return nil, fmt.Errorf("GPU settings are made through the NVIDIA driver: %s; configure the driver section or install the driver first", noDriverReason(snap.Driver.Reason))
	}
	if len(snap.Devices) == 0 {
		return nil, errors.New("the driver is loaded but NVML lists no GPUs to apply settings to (`gpu-bootstrap inventory` shows what was found)")
	}
	var errs []error
	for _, dev := range snap.Devices {
		if dev.Lost || dev.UUID == "" {
			errs = append(errs, fmt.Errorf("%s cannot be configured: %s; reset it (nvidia-smi -r) or reboot", gpuLabel(dev), gpuReadError(dev)))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	var changes []Change
	if s.cfg.MIG != nil {
		migChanges, err := planMIG(*s.cfg.MIG, snap.Devices)
		if err != nil {
			errs = append(errs, err)
		}
		changes = append(changes, migChanges...)
	}
	for _, plan := range []func([]nvml.Device) (*Change, error){s.planComputeMode, s.planPowerLimit, s.planApplicationClocks} {
		change, err := plan(snap.Devices)
		if err != nil {
			errs = append(errs, err)
		}
		if change != nil {
			changes = append(changes, *change)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return changes, nil
}

// planComputeMode plans the compute mode of the GPUs whose mode differs
// (or is not reported).
func (s gpuSettingsStep) planComputeMode(devs []nvml.Device) (*Change, error) {
	if s.cfg.ComputeMode == "" {
		return nil, nil
	}
	mode, ok := canonicalComputeMode(s.cfg.ComputeMode)
	if !ok {
		return nil, fieldError("gpu.compute_mode", "%s", computeModeProblem(s.cfg.ComputeMode))
	}
	var todo []nvml.Device
	for _, dev := range devs {
		if dev.ComputeMode != mode {
			todo = append(todo, dev)
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	return &Change{
		Summary: fmt.Sprintf("set compute mode %s on %s (now %s)", mode, gpuLabels(todo), currentValues(todo, func(d nvml.Device) string { return orUnknown(d.ComputeMode) })),
		Ops: []Op{ActionOp(forEachGPU(todo, func(h *Host, dev nvml.Device) error {
			return h.GPUs.SetComputeMode(dev.UUID, mode)
		}))},
		Note: "compute mode returns to Default when the driver unloads; keep persistence mode on (persistence: true) so it stays set",
	}, nil
}

// planPowerLimit checks the limit against every GPU's allowed range and
// plans it for the GPUs whose enforced limit differs.
func (s gpuSettingsStep) planPowerLimit(devs []nvml.Device) (*Change, error) {
	if s.cfg.PowerLimitWatts == nil {
		return nil, nil
	}
	want := *s.cfg.PowerLimitWatts
	var errs []error
	var unsupported []nvml.Device
	outside := map[string][]nvml.Device{} // allowed range -> GPUs
	var ranges []string
	var todo []nvml.Device
	for _, dev := range devs {
		if dev.PowerLimitW == nil {
			unsupported = append(unsupported, dev)
			continue
		}
		if lo, hi := dev.PowerLimitMinW, dev.PowerLimitMaxW; lo != nil && hi != nil && (float64(want) < *lo || float64(want) > *hi) {
			r := fmt.Sprintf("%s–%s W", formatWatts(*lo), formatWatts(*hi))
			if outside[r] == nil {
				ranges = append(ranges, r)
			}
			outside[r] = append(outside[r], dev)
			continue
		}
		if math.Abs(*dev.PowerLimitW-float64(want)) >= 0.5 {
			todo = append(todo, dev)
		}
	}
	if len(unsupported) > 0 {
		errs = append(errs, fieldError("gpu.power_limit_watts", "%s %s not report a power limit, so it cannot be set (power management not supported); leave power_limit_watts out", gpuLabels(unsupported), doVerb(unsupported)))
	}
	for _, r := range ranges {
		errs = append(errs, fieldError("gpu.power_limit_watts", "%d W is outside the range %s %s: %s", want, gpuLabels(outside[r]), allowVerb(outside[r]), r))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(todo) == 0 {
		return nil, nil
	}
	return &Change{
		Summary: fmt.Sprintf("set the power limit to %d W on %s (now %s)", want, gpuLabels(todo), currentValues(todo, func(d nvml.Device) string { return formatWatts(*d.PowerLimitW) + " W" })),
		Ops: []Op{ActionOp(forEachGPU(todo, func(h *Host, dev nvml.Device) error {
			return h.GPUs.SetPowerLimit(dev.UUID, want)
		}))},
		Note: "the power limit returns to the default when the driver unloads; keep persistence mode on (persistence: true) so it stays set",
	}, nil
}

// planApplicationClocks checks the clocks against each GPU's maximum clocks
// where NVML reports them (the list of supported pairs is not in the
// snapshot, so NVML judges the exact pair) and plans them for the GPUs
// whose application clocks differ.
func (s gpuSettingsStep) planApplicationClocks(devs []nvml.Device) (*Change, error) {
	ac := s.cfg.ApplicationClocks
	if ac == nil {
		return nil, nil
	}
	var errs []error
	var todo []nvml.Device
	for _, dev := range devs {
		c := dev.Clocks
		if c.MaxMemoryMHz != nil && ac.MemoryMHz > *c.MaxMemoryMHz {
			errs = append(errs, fieldError("gpu.application_clocks.memory_mhz", "%d MHz is above the maximum memory clock of %s, %d MHz", ac.MemoryMHz, gpuLabel(dev), *c.MaxMemoryMHz))
		}
		if c.MaxGraphicsMHz != nil && ac.GraphicsMHz > *c.MaxGraphicsMHz {
			errs = append(errs, fieldError("gpu.application_clocks.graphics_mhz", "%d MHz is above the maximum graphics clock of %s, %d MHz", ac.GraphicsMHz, gpuLabel(dev), *c.MaxGraphicsMHz))
		}
		if c.AppMemoryMHz == nil || c.AppGraphicsMHz == nil || *c.AppMemoryMHz != ac.MemoryMHz || *c.AppGraphicsMHz != ac.GraphicsMHz {
			todo = append(todo, dev)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(todo) == 0 {
		return nil, nil
	}
	return &Change{
		Summary: fmt.Sprintf("set application clocks to %d MHz memory, %d MHz graphics on %s (now %s)", ac.MemoryMHz, ac.GraphicsMHz, gpuLabels(todo), currentValues(todo, func(d nvml.Device) string {
			return fmt.Sprintf("%s/%s MHz", mhzOrUnknown(d.Clocks.AppMemoryMHz), mhzOrUnknown(d.Clocks.AppGraphicsMHz))
		})),
		Ops: []Op{ActionOp(forEachGPU(todo, func(h *Host, dev nvml.Device) error {
			return h.GPUs.SetApplicationClocks(dev.UUID, ac.MemoryMHz, ac.GraphicsMHz)
		}))},
		Note: "application clocks return to the default when the driver unloads; keep persistence mode on (persistence: true) so they stay set",
	}, nil
}

// forEachGPU is a GPU action (ActionOp) that calls set for each GPU,
// stopping at the first error.
func forEachGPU(devs []nvml.Device, set func(h *Host, dev nvml.Device) error) func(context.Context, *Host) error {
	return func(ctx context.Context, h *Host) error {
		for _, dev := range devs {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := set(h, dev); err != nil {
				return err
			}
		}
		return nil
	}
}
