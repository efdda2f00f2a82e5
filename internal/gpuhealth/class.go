package gpuhealth

import (
	"fmt"
	"strings"
)

// FaultClass names a kind of GPU fault. Settings.Fatal says which classes
// turn the condition False; the others degrade (the condition stays True,
// the agent writes a Warning Event). A fault clears only on evidence that
// it is gone, never on a timer; each class says what that evidence is
// (docs/guides/gpu-health.md has the same table).
type FaultClass string

// The fault classes, in the order they are listed and judged.
const (
	// ClassXIDCritical: an XID in EKS's well-known list (CriticalXID).
	// Clears on a GPU reset (its since-driver-load counters go back) or a
	// reboot (a new boot ID).
	ClassXIDCritical FaultClass = "xid_critical"
	// ClassXIDOther: any other XID. Clears after a whole sample window
	// without that XID on that GPU (its count stopped growing).
	ClassXIDOther FaultClass = "xid_other"
	// ClassGPULost: NVML answers ERROR_GPU_IS_LOST (XID 79's state, even
	// when the agent never saw the event). Clears when the GPU answers.
	ClassGPULost FaultClass = "gpu_lost"
	// ClassECCUncorrectable: uncorrectable (double-bit) ECC errors since
	// the driver loaded. Clears when the volatile counter goes back (a GPU
	// reset) or on a reboot.
	ClassECCUncorrectable FaultClass = "ecc_uncorrectable"
	// ClassRowRemapFailure: row remapping failed (no spare rows left).
	// Clears when NVML no longer reports the failure.
	ClassRowRemapFailure FaultClass = "row_remap_failure"
	// ClassRetirementPending: pages or rows wait for retirement at the
	// next GPU reset. Clears when NVML no longer reports them pending.
	ClassRetirementPending FaultClass = "retirement_pending"
	// ClassNVLinkErrors: NVLink error counters grew in the last window.
	// Clears when they stop growing for a whole window, or go back.
	ClassNVLinkErrors FaultClass = "nvlink_errors"
	// ClassPCIeReplays: PCIe replay counters grew in the last window.
	// Clears when they stop growing for a whole window, or go back.
	ClassPCIeReplays FaultClass = "pcie_replays"
	// ClassDeviceCount: fewer GPUs answer NVML than the node should have.
	// Clears when the expected number answers.
	ClassDeviceCount FaultClass = "device_count"
)

var allClasses = []FaultClass{
	ClassXIDCritical, ClassXIDOther, ClassGPULost, ClassECCUncorrectable,
	ClassRowRemapFailure, ClassRetirementPending, ClassNVLinkErrors,
	ClassPCIeReplays, ClassDeviceCount,
}

// AllClasses lists every fault class, in a fixed order.
func AllClasses() []FaultClass { return append([]FaultClass(nil), allClasses...) }

// DefaultFatal lists the classes that are fatal by default: those whose
// EKS reason is Fatal in reasons.yaml (NvidiaXIDError, NvidiaDoubleBitError,
// NvidiaDeviceCountMismatch) plus a lost GPU (XID 79) and a row remapping
// failure (XID 64, in EKS's WellKnownXidCodes). NVLink errors are Fatal in
// EKS's vocabulary too, but the agent counts them from counters, not from
// DCGM's policy, so they degrade by default: a link that retrains once is
// not a reason to replace a node.
func DefaultFatal() []FaultClass {
	return []FaultClass{ClassXIDCritical, ClassGPULost, ClassECCUncorrectable, ClassRowRemapFailure, ClassDeviceCount}
}

// ParseFaultClass reads a class name; the error lists the valid names.
func ParseFaultClass(s string) (FaultClass, error) {
	for _, c := range allClasses {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("unknown fault class %q; valid classes are %s", s, classNames(allClasses, ", "))
}

func classNames(classes []FaultClass, sep string) string {
	names := make([]string, len(classes))
	for i, c := range classes {
		names[i] = string(c)
	}
	return strings.Join(names, sep)
}

// rank is a class's place in AllClasses (for ordering).
func (c FaultClass) rank() int {
	for i, k := range allClasses {
		if k == c {
			return i
		}
	}
	return len(allClasses)
}
