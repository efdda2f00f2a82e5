package telemetry

import "fmt"

// xidMeanings are what the XIDs a datacenter operator meets most often
// usually mean, worded after NVIDIA's XID catalog
// (https://docs.nvidia.com/deploy/xid-errors/) and its resolution buckets.
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
	119: "timed out waiting for the GPU System Processor (GSP firmware); reset the GPU",
	120: "GPU System Processor (GSP firmware) error; reset the GPU",
	121: "C2C (chip-to-chip) link error",
	140: "uncorrectable ECC error that escaped containment; reset the GPU",
	143: "GPU initialization failed; reset the GPU",
	154: "the driver changed the GPU's recovery action (reset, reboot or drain); see the XID before it",
	// NVML reports 999 for an XID it has no number for.
	999: "an XID NVML could not identify; the kernel log (dmesg, journalctl -k) has its number",
}

// XIDMeaning says what an XID usually means; ok is false for XIDs this
// table does not know.
func XIDMeaning(xid uint64) (meaning string, ok bool) {
	meaning, ok = xidMeanings[xid]
	return meaning, ok
}

// describeXID is an XID event's Detail: its usual meaning, or where to look
// it up.
func describeXID(xid uint64) string {
	if meaning, ok := XIDMeaning(xid); ok {
		return meaning
	}
	return fmt.Sprintf("XID %d: see NVIDIA's XID catalog (https://docs.nvidia.com/deploy/xid-errors/)", xid)
}
