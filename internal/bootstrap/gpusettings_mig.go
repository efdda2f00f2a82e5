package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// This file plans MIG: the mode of each selected GPU, then its GPU
// instances. Switching the mode of an Ampere GPU usually needs a GPU reset,
// so the mode may be pending (Snapshot: MIG.Pending != MIG.Current); a
// pending switch to the wanted mode is not planned again — Verify reports it
// until the GPU is reset — and instances are laid out only on a GPU whose
// MIG mode is on.

// migProfilePattern is a GPU instance profile name as nvidia-smi -lgip
// prints it: "<slices>g.<memory>gb", optionally with the media-extension
// or graphics variant ("+me", "+me.all", "-me", "+gfx"). Compute instance
// profiles ("1c.3g.20gb") are not accepted: each GPU instance gets one
// compute instance using all of it. Whether the GPU offers the profile is
// checked by NVML when the instances are created.
var migProfilePattern = regexp.MustCompile(`^[1-9][0-9]*g\.[1-9][0-9]*gb(\+me|\+me\.all|-me|\+gfx)?$`)

// migVariantSuffix matches the variant part of a profile name.
var migVariantSuffix = regexp.MustCompile(`(\+me|\+me\.all|-me|\+gfx)$`)

func (c *MIGConfig) validate(field string) []error {
	var errs []error
	if !c.Enabled && len(c.Profiles) > 0 {
		errs = append(errs, fieldError(field+".profiles", "MIG instances need MIG mode; set %s.enabled: true or remove the profiles", field))
	}
	for i, p := range c.Profiles {
		if !migProfilePattern.MatchString(strings.ToLower(strings.TrimSpace(p))) {
			errs = append(errs, fieldError(fmt.Sprintf("%s.profiles[%d]", field, i), "%q is not a GPU instance profile; write it as nvidia-smi mig -lgip shows it, e.g. 1g.5gb, 3g.20gb or 1g.10gb+me", p))
		}
	}
	seen := map[int]bool{}
	for i, g := range c.GPUs {
		switch {
		case g < 0:
			errs = append(errs, fieldError(fmt.Sprintf("%s.gpus[%d]", field, i), "%d is not a GPU index (indexes start at 0, as nvidia-smi -L numbers them)", g))
		case seen[g]:
			errs = append(errs, fieldError(fmt.Sprintf("%s.gpus[%d]", field, i), "GPU %d is listed twice", g))
		}
		seen[g] = true
	}
	return errs
}

// migTargets are the GPUs the MIG section applies to: the listed ones, or
// every MIG-capable GPU.
func migTargets(cfg MIGConfig, devs []nvml.Device) ([]nvml.Device, error) {
	if len(cfg.GPUs) == 0 {
		var targets []nvml.Device
		for _, d := range devs {
			if d.MIG.Supported {
				targets = append(targets, d)
			}
		}
		if len(targets) == 0 && cfg.Enabled {
			return nil, fieldError("gpu.mig.enabled", "no GPU on this host supports MIG (%s); remove the mig section", devs[0].Name)
		}
		return targets, nil
	}
	byIndex := map[int]nvml.Device{}
	var indexes []int
	for _, d := range devs {
		byIndex[d.Index] = d
		indexes = append(indexes, d.Index)
	}
	var targets []nvml.Device
	var errs []error
	for i, g := range cfg.GPUs {
		d, ok := byIndex[g]
		switch {
		case !ok:
			errs = append(errs, fieldError(fmt.Sprintf("gpu.mig.gpus[%d]", i), "there is no GPU %d; this host has GPUs %s", g, indexRuns(indexes)))
		case !d.MIG.Supported:
			errs = append(errs, fieldError(fmt.Sprintf("gpu.mig.gpus[%d]", i), "%s (%s) does not support MIG", gpuLabel(d), d.Name))
		default:
			targets = append(targets, d)
		}
	}
	slices.SortFunc(targets, func(a, b nvml.Device) int { return a.Index - b.Index })
	return targets, errors.Join(errs...)
}

// planMIG plans the MIG mode of the targets, then their instances.
func planMIG(cfg MIGConfig, devs []nvml.Device) ([]Change, error) {
	targets, err := migTargets(cfg, devs)
	if err != nil {
		return nil, err
	}
	want := cfg.Enabled
	var switching, ready []nvml.Device
	for _, d := range targets {
		switch {
		case d.MIG.Pending != want:
			switching = append(switching, d)
		case d.MIG.Current == want:
			ready = append(ready, d)
		}
		// Otherwise the switch to the wanted mode is already pending a reset.
	}
	var changes []Change
	if len(switching) > 0 {
		changes = append(changes, migModeChange(want, switching))
	}
	if !want || len(cfg.Profiles) == 0 {
		return changes, nil
	}
	var errs []error
	for _, d := range ready {
		if sameMIGLayout(d.MIG.Devices, cfg.Profiles) {
			continue
		}
		if len(d.Processes) > 0 {
			errs = append(errs, fmt.Errorf("%s has %d process(es) running (%s); stop them before its MIG instances are replaced", gpuLabel(d), len(d.Processes), processList(d.Processes)))
			continue
		}
		changes = append(changes, migLayoutChange(d, cfg.Profiles, false))
	}
	for _, d := range switching {
		changes = append(changes, migLayoutChange(d, cfg.Profiles, true))
	}
	return changes, errors.Join(errs...)
}

// migModeChange switches MIG mode on the GPUs. Turning it off first removes
// the GPU's instances, which NVML requires.
func migModeChange(enabled bool, devs []nvml.Device) Change {
	verb := "enable"
	if !enabled {
		verb = "disable"
	}
	return Change{
		Summary: fmt.Sprintf("%s MIG mode on %s", verb, gpuLabels(devs)),
		Ops: []Op{ActionOp(forEachGPU(devs, func(h *Host, dev nvml.Device) error {
			if !enabled && dev.MIG.Current && len(dev.MIG.Devices) > 0 {
				if err := h.GPUs.ConfigureMIG(dev.UUID, nil); err != nil {
					return fmt.Errorf("removing the MIG instances of %s before disabling MIG: %w", gpuLabel(dev), err)
				}
			}
			_, err := h.GPUs.SetMIGMode(dev.UUID, enabled)
			return err
		}))},
		// Whether NVML switched at once or left the switch pending is only
		// known once it ran; `gpu-bootstrap check` tells.
		Note: fmt.Sprintf("a MIG mode change on %s takes effect after a GPU reset or reboot when NVML cannot switch at once (`gpu-bootstrap check` reports a pending switch)", gpuLabels(devs)),
	}
}

// migLayoutChange replaces a GPU's MIG instances with one per profile. When
// MIG mode is being switched in the same apply, it does so only if the mode
// took effect at once; otherwise the first apply after the reset does it.
func migLayoutChange(dev nvml.Device, profiles []string, afterSwitch bool) Change {
	layout := strings.Join(profiles, ", ")
	change := Change{
		Summary: fmt.Sprintf("lay out MIG instances %s on %s (now %s)", layout, gpuLabel(dev), describeMIGLayout(dev.MIG.Devices)),
		Ops: []Op{ActionOp(func(ctx context.Context, h *Host) error {
			return h.GPUs.ConfigureMIG(dev.UUID, profiles)
		})},
	}
	if afterSwitch {
		change.Summary = fmt.Sprintf("lay out MIG instances %s on %s once its MIG mode is on", layout, gpuLabel(dev))
		change.Ops = []Op{ActionOp(func(ctx context.Context, h *Host) error {
			snap, err := h.Snapshot()
			if err != nil {
				return err
			}
			for _, d := range snap.Devices {
				if d.UUID == dev.UUID && d.MIG.Current {
					return h.GPUs.ConfigureMIG(dev.UUID, profiles)
				}
			}
			return nil
		})}
		change.Note = fmt.Sprintf("if MIG mode on %s waits for a reset, run `gpu-bootstrap apply` again after it to lay out the MIG instances", gpuLabel(dev))
	}
	return change
}

// sameMIGLayout compares a GPU's instances with the wanted profiles as
// multisets. Variants (+me, -me, +gfx) are ignored: NVML's MIG device
// attributes do not say which variant an instance is, so the snapshot may
// name a "1g.10gb+me" instance "1g.10gb".
func sameMIGLayout(current []nvml.MIGDevice, profiles []string) bool {
	have := make([]string, len(current))
	for i, d := range current {
		have[i] = migBaseProfile(d.Profile)
	}
	want := make([]string, len(profiles))
	for i, p := range profiles {
		want[i] = migBaseProfile(p)
	}
	slices.Sort(have)
	slices.Sort(want)
	return slices.Equal(have, want)
}

func migBaseProfile(p string) string {
	return migVariantSuffix.ReplaceAllString(strings.ToLower(strings.TrimSpace(p)), "")
}

func describeMIGLayout(devs []nvml.MIGDevice) string {
	if len(devs) == 0 {
		return "none"
	}
	names := make([]string, len(devs))
	for i, d := range devs {
		names[i] = d.Profile
	}
	return strings.Join(names, ", ")
}

func processList(procs []nvml.Process) string {
	parts := make([]string, len(procs))
	for i, p := range procs {
		parts[i] = fmt.Sprintf("pid %d", p.PID)
		if p.Name != "" {
			parts[i] += " " + p.Name
		}
	}
	return strings.Join(parts, ", ")
}
