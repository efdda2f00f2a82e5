package nvml

import (
	"fmt"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns the per-GPU settings the bootstrap changes. Each setter
// finds the GPU by UUID, returns ErrNoDriver without a driver, and wraps
// NVML's answer with the GPU and the action ("setting the power limit of
// GPU 3 (GPU-…): ERROR_NO_PERMISSION: needs root"). NVML requires root for
// all of them.

// SetPersistenceMode turns persistence mode on or off.
func (g *GPUs) SetPersistenceMode(uuid string, enabled bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	dev, ref, err := g.deviceByUUID(uuid)
	if err != nil {
		return err
	}
	state := gonvml.FEATURE_DISABLED
	if enabled {
		state = gonvml.FEATURE_ENABLED
	}
	if ret := callReturn(func() gonvml.Return { return dev.SetPersistenceMode(state) }); ret != gonvml.SUCCESS {
		return fmt.Errorf("setting persistence mode of %s to %s: %w", ref, onOff(enabled), explain(ret))
	}
	return nil
}

// computeModes are the modes SetComputeMode accepts, by their nvidia-smi
// spelling.
var computeModes = map[string]gonvml.ComputeMode{
	ComputeModeDefault:          gonvml.COMPUTEMODE_DEFAULT,
	ComputeModeExclusiveProcess: gonvml.COMPUTEMODE_EXCLUSIVE_PROCESS,
	ComputeModeProhibited:       gonvml.COMPUTEMODE_PROHIBITED,
}

// SetComputeMode sets the compute mode: one of the ComputeMode* constants.
func (g *GPUs) SetComputeMode(uuid string, mode string) error {
	nvmlMode, known := computeModes[mode]
	if !known {
		return fmt.Errorf("unknown compute mode %q: use %s, %s or %s", mode, ComputeModeDefault, ComputeModeExclusiveProcess, ComputeModeProhibited)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	dev, ref, err := g.deviceByUUID(uuid)
	if err != nil {
		return err
	}
	if ret := callReturn(func() gonvml.Return { return dev.SetComputeMode(nvmlMode) }); ret != gonvml.SUCCESS {
		return fmt.Errorf("setting compute mode of %s to %s: %w", ref, mode, explain(ret))
	}
	return nil
}

// SetPowerLimit sets the power management limit in watts. It is checked
// against the GPU's allowed range first (when NVML reports one), so an
// out-of-range value says what the range is.
func (g *GPUs) SetPowerLimit(uuid string, watts uint32) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	dev, ref, err := g.deviceByUUID(uuid)
	if err != nil {
		return err
	}
	milliwatts := uint64(watts) * 1000
	minMW, maxMW, ret := call2(dev.GetPowerManagementLimitConstraints)
	switch {
	case ret == gonvml.SUCCESS:
		if milliwatts < uint64(minMW) || milliwatts > uint64(maxMW) {
			return fmt.Errorf("power limit %d W is outside the range of %s: %s–%s W", watts, ref, formatWatts(minMW), formatWatts(maxMW))
		}
	case !unreported(ret):
		return fmt.Errorf("reading the power limit range of %s: %w", ref, explain(ret))
	}
	if milliwatts > uint64(^uint32(0)) {
		return fmt.Errorf("power limit %d W is too large", watts)
	}
	if ret := callReturn(func() gonvml.Return { return dev.SetPowerManagementLimit(uint32(milliwatts)) }); ret != gonvml.SUCCESS {
		return fmt.Errorf("setting the power limit of %s to %d W: %w", ref, watts, explain(ret))
	}
	return nil
}

// SetApplicationClocks sets the memory and graphics application clocks in
// MHz; NVML rejects pairs the GPU does not list as supported.
func (g *GPUs) SetApplicationClocks(uuid string, memoryMHz, graphicsMHz uint32) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	dev, ref, err := g.deviceByUUID(uuid)
	if err != nil {
		return err
	}
	if ret := callReturn(func() gonvml.Return { return dev.SetApplicationsClocks(memoryMHz, graphicsMHz) }); ret != gonvml.SUCCESS {
		err := explain(ret)
		if ret == gonvml.ERROR_INVALID_ARGUMENT {
			err = fmt.Errorf("%w: the GPU does not support this clock pair (nvidia-smi -q -d SUPPORTED_CLOCKS lists them)", ret)
		}
		return fmt.Errorf("setting application clocks of %s to %d MHz memory, %d MHz graphics: %w", ref, memoryMHz, graphicsMHz, err)
	}
	return nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// formatWatts prints milliwatts as watts without a needless ".0".
func formatWatts(milliwatts uint32) string {
	s := fmt.Sprintf("%.3f", float64(milliwatts)/1000)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}
