package gpuhealth

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// GPURef names one GPU of the node the way a person finds it: the index
// NVML gives it, its UUID and its PCI bus ID.
type GPURef struct {
	Index    int    `json:"index"`
	UUID     string `json:"uuid,omitempty"`
	PCIBusID string `json:"pci_bus_id,omitempty"`
}

// String is "GPU 3 (GPU-…, 0000:9a:00.0)", leaving out what is unknown.
func (g GPURef) String() string {
	var ids []string
	if g.UUID != "" {
		ids = append(ids, g.UUID)
	}
	if g.PCIBusID != "" {
		ids = append(ids, g.PCIBusID)
	}
	if len(ids) == 0 {
		return "GPU " + strconv.Itoa(g.Index)
	}
	return fmt.Sprintf("GPU %d (%s)", g.Index, strings.Join(ids, ", "))
}

// Fault is one standing GPU fault the agent found.
type Fault struct {
	Class FaultClass
	// GPU is the faulty GPU; nil for a fault of the node (device count).
	GPU *GPURef
	// XID is the XID number of ClassXIDCritical and ClassXIDOther faults.
	XID uint64
	// Count is how many: XID events seen, uncorrectable ECC errors, pages
	// pending retirement, NVLink errors or PCIe replays in the last sample
	// window, GPUs that answer NVML (device count).
	Count uint64
	// Since is when the agent first saw the fault.
	Since time.Time
	// Detail is added to the message (for ClassDeviceCount it is the whole
	// message; see DeviceCountFault).
	Detail string
}

// DeviceCountFault is the node fault of fewer GPUs answering NVML than
// expected, with the message "3 of 8 GPUs answer NVML; missing: …".
func DeviceCountFault(answering, expected int, missing []string, since time.Time) Fault {
	detail := fmt.Sprintf("%d of %d GPUs answer NVML", answering, expected)
	if len(missing) > 0 {
		detail += "; missing: " + strings.Join(missing, ", ")
	}
	return Fault{Class: ClassDeviceCount, Count: uint64(max(answering, 0)), Since: since, Detail: detail}
}

// Reason is the condition reason for the fault in EKS's vocabulary
// (pkg/reasons/reasons.yaml, AcceleratedHardwareReady) where it has one.
func (f Fault) Reason() string {
	switch f.Class {
	case ClassXIDCritical, ClassXIDOther:
		if CriticalXID(f.XID) {
			return XIDErrorReason(f.XID)
		}
		return XIDWarningReason(f.XID)
	case ClassGPULost:
		// A lost GPU is XID 79's state, whether or not the agent saw the event.
		return XIDErrorReason(79)
	case ClassECCUncorrectable:
		return ReasonDoubleBitError
	case ClassRowRemapFailure:
		return ReasonRowRemapFailure
	case ClassRetirementPending:
		return ReasonPageRetirement
	case ClassNVLinkErrors:
		return ReasonNVLinkError
	case ClassPCIeReplays:
		return ReasonPCIeError
	case ClassDeviceCount:
		return ReasonDeviceCountMismatch
	}
	return ReasonNVMLError
}

// Message says what is wrong, where and what to do, e.g.
// "XID 79 on GPU 3 (GPU-…, 0000:9a:00.0): the GPU has fallen off the bus: …".
func (f Fault) Message() string {
	where := "the node"
	if f.GPU != nil {
		where = f.GPU.String()
	}
	var msg string
	switch f.Class {
	case ClassXIDCritical, ClassXIDOther:
		msg = fmt.Sprintf("XID %d on %s: %s", f.XID, where, describeXID(f.XID))
		if f.Count > 1 {
			msg += fmt.Sprintf(" (%d times)", f.Count)
		}
	case ClassGPULost:
		meaning, _ := XIDMeaning(79)
		msg = fmt.Sprintf("XID 79 on %s: %s (NVML answers GPU_IS_LOST)", where, meaning)
	case ClassECCUncorrectable:
		msg = fmt.Sprintf("%d uncorrectable (double-bit) ECC %s on %s since the driver loaded; reset the GPU, replace it if this repeats",
			f.Count, plural(f.Count, "error", "errors"), where)
	case ClassRowRemapFailure:
		msg = fmt.Sprintf("row remapping failed on %s: its memory has no spare rows left; replace the GPU", where)
	case ClassRetirementPending:
		msg = fmt.Sprintf("%d memory %s on %s wait for retirement at the next GPU reset; reset the GPU when it is idle",
			f.Count, plural(f.Count, "page or row", "pages or rows"), where)
	case ClassNVLinkErrors:
		msg = fmt.Sprintf("%d NVLink %s on %s in the last sample window; check the links with nvidia-smi nvlink, reset the GPU if they keep growing",
			f.Count, plural(f.Count, "error", "errors"), where)
	case ClassPCIeReplays:
		msg = fmt.Sprintf("%d PCIe %s on %s in the last sample window; check the GPU's seating and riser if they keep growing",
			f.Count, plural(f.Count, "replay", "replays"), where)
	case ClassDeviceCount:
		if f.Detail != "" {
			return f.Detail
		}
		return fmt.Sprintf("only %d GPUs answer NVML, fewer than the node should have", f.Count)
	default:
		msg = fmt.Sprintf("%s on %s", f.Class, where)
	}
	if f.Detail != "" {
		msg += "; " + f.Detail
	}
	return msg
}

// Key is the fault's identity across samples: class, GPU (UUID, else
// index) and XID.
func (f Fault) Key() string {
	gpu := "node"
	if f.GPU != nil {
		gpu = f.GPU.UUID
		if gpu == "" {
			gpu = strconv.Itoa(f.GPU.Index)
		}
	}
	return fmt.Sprintf("%s/%s/%d", f.Class, gpu, f.XID)
}

// describeXID is an XID's usual meaning, or where to look it up.
func describeXID(xid uint64) string {
	if meaning, ok := XIDMeaning(xid); ok {
		return meaning
	}
	return "not in this agent's table; see NVIDIA's XID catalog (https://docs.nvidia.com/deploy/xid-errors/)"
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
