package bootstrap

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// This file checks, before anything is installed, that the configured
// kernel module flavor can drive the machine's GPUs.
//
// NVIDIA's open GPU kernel modules support Turing and newer only; Maxwell,
// Pascal and Volta need the proprietary modules. Blackwell (and newer) is
// the other way round: NVIDIA does not support the proprietary modules
// there. With a driver loaded the architecture comes from NVML; without one
// from the PCI device IDs in sysfs. The lowest device ID in the open
// modules' supported-gpus list (shipped in every driver, e.g. 580.82.07) is
// 0x1E02 (TITAN RTX, TU102), so a display function below 0x1E00 is older
// than Turing; from 0x2900 (B200) up the list holds Blackwell parts only.

const (
	firstTuringDeviceID    = 0x1e00
	firstBlackwellDeviceID = 0x2900
)

var preTuringArchitectures = []string{"kepler", "maxwell", "pascal", "volta"}
var openOnlyArchitectures = []string{"blackwell", "rubin"}

// checkKernelModuleGPUs returns a *FieldError on field (driver.kernel_modules,
// or driver.branch when no flavor of the branch drives the GPU) when a GPU of
// the snapshot cannot run the configured branch and flavor. The branch's row
// of the lifecycle table (driver_lifecycle.go) says whether it still drives
// GPUs older than Turing and which flavors it ships.
func checkKernelModuleGPUs(field string, cfg DriverConfig, snap nvml.Snapshot) error {
	branchField := strings.TrimSuffix(field, ".kernel_modules") + ".branch"
	n := cfg.branchNumber()
	drivesPreTuring := n == 0 || n <= lastPreTuringBranch
	if b, ok := lifecycleOf(n); ok {
		drivesPreTuring = b.preTuring && b.proprietary
	}
	for _, gpu := range describeGPUs(snap) {
		switch {
		case gpu.preTuring && !drivesPreTuring:
			return fieldError(branchField, `%s is older than %s, and branch %d no longer drives it (NVIDIA's last branch for Maxwell, Pascal and Volta GPUs is %d): set %s to %q or older and %s to "proprietary"`,
				gpu.name, openModulesMinArchitecture, n, lastPreTuringBranch, branchField, fmt.Sprint(lastPreTuringBranch), field)
		case cfg.open() && gpu.preTuring:
			return fieldError(field, `%s is older than %s, and NVIDIA's open kernel modules support %s and newer only: set %s to "proprietary"`, gpu.name, openModulesMinArchitecture, openModulesMinArchitecture, field)
		case !cfg.open() && gpu.openOnly:
			return fieldError(field, `%s is Blackwell or newer, where NVIDIA supports only the open kernel modules: set %s to "open" (the default)`, gpu.name, field)
		}
	}
	return nil
}

type gpuGeneration struct {
	name      string // "GPU 0 (Tesla V100-SXM2-16GB, Volta)", "PCI 0000:3b:00.0 (device 0x1db4)"
	preTuring bool
	openOnly  bool
}

// describeGPUs is each GPU's generation, from NVML when it lists GPUs, from
// sysfs otherwise.
func describeGPUs(snap nvml.Snapshot) []gpuGeneration {
	var gens []gpuGeneration
	if snap.Driver.Loaded && len(snap.Devices) > 0 {
		for _, dev := range snap.Devices {
			arch := strings.ToLower(dev.Architecture)
			if arch == "" || arch == "unknown" {
				continue
			}
			gens = append(gens, gpuGeneration{
				name:      fmt.Sprintf("GPU %d (%s, %s)", dev.Index, dev.Name, dev.Architecture),
				preTuring: containsFold(preTuringArchitectures, arch),
				openOnly:  containsFold(openOnlyArchitectures, arch),
			})
		}
		return gens
	}
	for _, fn := range nvidiaDisplayFunctions(snap) {
		id, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(fn.DeviceID), "0x"), 16, 16)
		if err != nil {
			continue
		}
		gens = append(gens, gpuGeneration{
			name:      fmt.Sprintf("the NVIDIA GPU at PCI %s (device 0x%04x)", fn.Address, id),
			preTuring: id < firstTuringDeviceID,
			openOnly:  id >= firstBlackwellDeviceID,
		})
	}
	return gens
}

// nvidiaDisplayFunctions are the snapshot's NVIDIA PCI functions of the
// display class (0x03: VGA 0300, 3D controller 0302): the GPUs, without
// their audio and USB functions or NVSwitches (a bridge, class 0680).
func nvidiaDisplayFunctions(snap nvml.Snapshot) []nvml.PCIDevice {
	var gpus []nvml.PCIDevice
	for _, fn := range snap.PCI {
		if strings.HasPrefix(strings.TrimPrefix(strings.ToLower(fn.Class), "0x"), "03") {
			gpus = append(gpus, fn)
		}
	}
	return gpus
}

func containsFold(list []string, s string) bool {
	for _, item := range list {
		if strings.EqualFold(item, s) {
			return true
		}
	}
	return false
}
