package gpuhealth

// xidMeanings are what the XIDs a datacenter operator meets most often
// usually mean, worded after NVIDIA's XID catalog
// (https://docs.nvidia.com/deploy/xid-errors/, "Analyzing Xid Errors with
// the Xid Catalog": each code's description, resolution bucket and trigger
// conditions). It covers every code of criticalXIDs.
// An XID is a driver report, not a diagnosis: the same number can have a
// hardware, driver or application cause.
var xidMeanings = map[uint64]string{
	8:   "the GPU stopped processing (a channel timed out); restart the application",
	13:  "graphics engine exception, usually an application fault such as an out-of-bounds access; restart the application",
	31:  "GPU memory page fault, usually an application touching an invalid address; restart the application",
	32:  "invalid or corrupted push buffer stream (driver or application, sometimes PCIe corruption)",
	38:  "driver firmware error",
	43:  "the GPU stopped processing: a channel was reset after an application fault; other work on the GPU goes on",
	44:  "graphics engine fault during a context switch",
	45:  "preemptive cleanup of a channel after earlier errors (often follows a double-bit ECC error); look at the XIDs before it",
	46:  "the GPU stopped processing (GPU timeout); reset the GPU",
	48:  "double-bit (uncorrectable) ECC error in GPU memory; the application using it was stopped, reset the GPU",
	54:  "auxiliary power is not connected to the GPU board; check the GPU's power connectors",
	61:  "internal micro-controller breakpoint or warning",
	62:  "internal micro-controller halt; reset the GPU",
	63:  "ECC page retirement or row remapping recorded; takes effect at the next GPU reset",
	64:  "ECC page retirement or row remapping failed; reset the GPU, replace it if this repeats",
	68:  "video decoder (NVDEC) exception",
	69:  "graphics engine class error, usually an application or driver fault",
	74:  "NVLink error: a link between GPUs (or to an NVSwitch) failed or retrained; reset the GPUs, check the links if it repeats",
	79:  "the GPU has fallen off the bus: it no longer answers over PCIe; a reset or a reboot is needed, check power and seating if it repeats",
	92:  "high rate of single-bit (corrected) ECC errors",
	94:  "contained uncorrectable ECC error: only the application that used the memory was affected; restart it",
	95:  "uncontained uncorrectable ECC error: every application on the GPU is affected; reset the GPU",
	109: "context switch timeout; reset the GPU",
	110: "security fault: uncommon unless the hardware failed; revert recent hardware changes and cold-reset the node, contact the hardware vendor if it repeats",
	119: "timed out waiting for the GPU System Processor (GSP firmware); reset the GPU",
	120: "GPU System Processor (GSP firmware) error; reset the GPU",
	121: "C2C (chip-to-chip) link error",
	136: "link training failed; reset the GPU, check the link's signal integrity if it repeats",
	140: "uncorrectable ECC error that escaped containment; reset the GPU",
	142: "video encoder (NVENC3) error; no automated recovery, contact the hardware vendor",
	143: "GPU initialization failed; reset the GPU",
	154: "the driver changed the GPU's recovery action (reset, reboot or drain); see the XID before it",
	151: "confidential computing key rotation failed; restart the VM or instance",
	155: "NVLink software-defined error: a link went down (also logged for an intentional link-down or sleep); reset the GPU",
	156: "resource retirement event: the GPU retired a resource; reset the GPU",
	158: "GPU fatal timeout; reset the GPU",
	// NVML reports 999 for an XID it has no number for.
	999: "an XID NVML could not identify; the kernel log (dmesg, journalctl -k) has its number",
}

// XIDMeaning says what an XID usually means; ok is false for XIDs this
// table does not know.
func XIDMeaning(xid uint64) (meaning string, ok bool) {
	meaning, ok = xidMeanings[xid]
	return meaning, ok
}

// criticalXIDs is EKS's WellKnownXidCodes
// (github.com/aws/eks-node-monitoring-agent,
// monitors/nvidia/dcgm/dcgm_policies.go): the XIDs its agent turns into a
// Fatal NvidiaXID<N>Error condition; every other XID is a Warning event.
// The value is NVIDIA's resolution bucket for the code, as that file gives
// it from NVIDIA's XID catalog.
var criticalXIDs = map[uint64]string{
	46:  "RESET_GPU",           // GPU stopped processing
	48:  "WORKFLOW_XID_48",     // double-bit ECC error
	54:  "CHECK_MECHANICALS",   // auxiliary power not connected
	62:  "RESET_GPU",           // internal micro-controller halt
	63:  "IGNORE",              // row remapping event; EC2 recommends replacing the instance
	64:  "RESET_GPU",           // row remapping failure
	74:  "WORKFLOW_NVLINK_ERR", // NVLink error
	79:  "RESTART_BM",          // fallen off the bus
	95:  "RESET_GPU",           // uncontained memory error
	109: "RESET_GPU",           // context switch timeout
	110: "RESET_GPU",           // security fault
	119: "RESET_GPU",           // GSP RPC timeout
	120: "RESET_GPU",           // GSP error
	136: "RESET_GPU",           // link training failed
	140: "RESET_GPU",           // unrecoverable ECC error
	142: "CONTACT_SUPPORT",     // NVENC3 error
	143: "RESET_GPU",           // GPU initialization error
	151: "RESTART_VM",          // key rotation error
	155: "RESET_GPU",           // NVLink SW defined error
	156: "RESET_GPU",           // resource retirement event
	158: "RESET_GPU",           // GPU fatal timeout
}

// CriticalXID reports whether xid is in EKS's WellKnownXidCodes: a fault
// of class ClassXIDCritical with reason NvidiaXID<N>Error, not a warning.
func CriticalXID(xid uint64) bool {
	_, ok := criticalXIDs[xid]
	return ok
}
