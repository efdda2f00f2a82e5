package bootstrap

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// This file holds Verify's checks of the driver and the GPUs themselves.

// checkDriver checks that the driver is loaded and on the configured
// branch (a moving driver.branch, "lts" or "production", resolved for today
// as the plan resolves it), and warns when the running branch is past its
// end of life (a warning, not a problem: the node still works). Without a
// driver it names the NVIDIA PCI functions present and the driver each is
// bound to, which tells "driver not installed" from "GPU passed through to
// a VM (vfio-pci)".
func (v *verification) checkDriver(snap nvml.Snapshot, cfg *Config, today time.Time) {
	if !snap.Driver.Loaded {
		reason := noDriverReason(snap.Driver.Reason)
		if !strings.HasPrefix(reason, "no NVIDIA driver loaded") {
			reason = "no NVIDIA driver loaded: " + reason
		}
		v.problem("%s; %s", reason, describePCI(snap.PCI))
		return
	}
	v.check("NVIDIA driver %s loaded (CUDA %s)", snap.Driver.Version, orUnknown(snap.Driver.CUDAVersion))
	if warning := runningEndOfLifeWarning(snap.Driver, today); warning != "" {
		v.runningEndOfLife = endOfLifeWarning(branchNumberOf(snap.Driver.Branch()), today)
		v.warn("%s", warning)
	}
	if cfg.Driver != nil && cfg.Driver.Branch != "" {
		want, note, err := cfg.Driver.resolve(today)
		if err != nil {
			v.problem("%v", err)
			return
		}
		asked, as := want.Branch, ""
		if note != "" {
			asked = fmt.Sprintf("%q, branch %s today", cfg.Driver.Branch, want.Branch)
			as = fmt.Sprintf(" (driver.branch %q)", cfg.Driver.Branch)
		}
		branch := snap.Driver.Branch()
		switch {
		case branch != want.Branch && note != "" && stillServes(branch, cfg.Driver.Branch, today):
			// A moving name moved on (NVIDIA's newer branch came out):
			// the running branch is still the kind asked for and
			// supported, so the node is not broken, only behind.
			v.driverBehind = true
			d, _ := movingBranch(cfg.Driver.Branch)
			v.check("driver branch %s (%s), still a supported %s branch; driver.branch is %s (the driver step's warning says how to move or stay)", branch, snap.Driver.Version, d, asked)
		case branch != want.Branch:
			v.problem("driver branch is %s (%s) but driver.branch is %s; run gpu-bootstrap apply and reboot", branch, snap.Driver.Version, asked)
		default:
			v.check("driver branch %s as configured%s", branch, as)
		}
	}
}

// runningEndOfLifeWarning is "driver 535.261.03: branch 535 reached its end
// of life in June 2026: …" for a loaded driver whose branch is past its end
// of life on today; "" otherwise. check and inventory show it.
func runningEndOfLifeWarning(d nvml.Driver, today time.Time) string {
	if !d.Loaded || d.Version == "" {
		return ""
	}
	warning := endOfLifeWarning(branchNumberOf(d.Branch()), today)
	if warning == "" {
		return ""
	}
	return fmt.Sprintf("driver %s: %s", d.Version, warning)
}

// RunningDriverEndOfLife is runningEndOfLifeWarning for the inventory
// command: the line to print about a loaded driver whose branch is past
// its end of life on today, "" when there is nothing to say.
func RunningDriverEndOfLife(d nvml.Driver, today time.Time) string {
	return runningEndOfLifeWarning(d, today)
}

// branchNumberOf is a three-digit branch as a number; 0 otherwise.
func branchNumberOf(branch string) int {
	return DriverConfig{Branch: branch}.branchNumber()
}

// describePCI lists the NVIDIA PCI functions for a driver problem.
func describePCI(pci []nvml.PCIDevice) string {
	if len(pci) == 0 {
		return "no NVIDIA PCI device found"
	}
	parts := make([]string, len(pci))
	for i, p := range pci {
		driver := p.Driver
		if driver == "" {
			driver = "no driver"
		}
		parts[i] = fmt.Sprintf("%s [10de:%s, %s]", p.Address, p.DeviceID, driver)
	}
	return fmt.Sprintf("NVIDIA PCI devices found: %s", strings.Join(parts, ", "))
}

// checkGPUCount checks how many GPUs NVML lists and, when some are missing,
// names the GPUs on the PCI bus NVML does not list.
func (v *verification) checkGPUCount(snap nvml.Snapshot, expect int) {
	if !snap.Driver.Loaded {
		return
	}
	n := len(snap.Devices)
	switch {
	case expect > 0 && n != expect:
		v.problem("expected %d GPUs (verify.expect_gpus), NVML lists %d%s", expect, n, unlistedGPUs(snap))
	case expect == 0 && n == 0:
		v.problem("NVML lists no GPU%s", unlistedGPUs(snap))
	case expect > 0:
		v.check("%d GPUs, as expected", n)
	default:
		v.check("%d GPUs", n)
	}
}

// unlistedGPUs names the display and 3D controllers on the PCI bus that NVML
// does not list (fallen off the bus, or bound to another driver).
func unlistedGPUs(snap nvml.Snapshot) string {
	listed := map[string]bool{}
	for _, d := range snap.Devices {
		if d.PCIBusID == "" {
			return "" // without NVML's bus ids the two lists cannot be matched
		}
		listed[strings.ToLower(d.PCIBusID)] = true
	}
	var missing []string
	for _, p := range snap.PCI {
		if !strings.HasPrefix(p.Class, "03") || listed[strings.ToLower(p.Address)] {
			continue
		}
		driver := p.Driver
		if driver == "" {
			driver = "no driver"
		}
		missing = append(missing, fmt.Sprintf("%s (%s)", p.Address, driver))
	}
	if len(missing) == 0 {
		return ""
	}
	return "; on the PCI bus but not listed: " + strings.Join(missing, ", ")
}

// checkGPUs checks each GPU's health and settings.
func (v *verification) checkGPUs(snap nvml.Snapshot, cfg *Config) {
	wantPersistence := cfg.Persistence != nil && *cfg.Persistence
	for _, d := range snap.Devices {
		name := gpuLabel(d)
		before := len(v.problems)
		if d.Lost {
			v.problem("%s has fallen off the bus (lost); reset it (nvidia-smi -r -i %d) or reboot", name, d.Index)
			continue
		}
		if d.Error != "" {
			v.problem("%s could not be read: %s", name, d.Error)
		}
		ecc := d.ECC
		if ecc.VolatileUncorrected != nil && *ecc.VolatileUncorrected > 0 {
			v.problem("%s has %d uncorrected ECC errors since the driver loaded; drain the node, then reset the GPU or reboot", name, *ecc.VolatileUncorrected)
		}
		if flagged(ecc.RetiredPagesPending) {
			v.problem("%s has memory pages waiting to be retired; reset the GPU (nvidia-smi -r -i %d) or reboot", name, d.Index)
		}
		if flagged(ecc.RemappedRowsFailure) {
			v.problem("%s failed to remap memory rows; the GPU should be replaced", name)
		} else if flagged(ecc.RemappedRowsPending) {
			v.problem("%s has memory rows waiting to be remapped; reset the GPU (nvidia-smi -r -i %d) or reboot", name, d.Index)
		}
		if wantPersistence && d.PersistenceMode != nil && !*d.PersistenceMode {
			v.problem("%s has persistence mode off but persistence is true", name)
		}
		if d.MIG.Supported && d.MIG.Current != d.MIG.Pending {
			v.problem("%s has a MIG mode switch to %s waiting for a reset; reset the GPU (nvidia-smi -r -i %d) or reboot", name, migModeWord(d.MIG.Pending), d.Index)
		}
		if len(v.problems) == before {
			v.check("%s: %s", name, gpuCheckSummary(d, wantPersistence))
		}
	}
}

// gpuCheckSummary says what passed for a healthy GPU.
func gpuCheckSummary(d nvml.Device, persistence bool) string {
	parts := []string{"no uncorrected ECC errors", "nothing waiting for a reset"}
	if d.ECC.VolatileUncorrected == nil {
		parts[0] = "ECC not reported"
	}
	if persistence {
		parts = append(parts, "persistence mode on")
	}
	return strings.Join(parts, ", ")
}

func flagged(b *bool) bool { return b != nil && *b }

func migModeWord(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
