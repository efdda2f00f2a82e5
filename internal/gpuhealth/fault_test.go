package gpuhealth

import (
	"testing"
	"time"
)

var gpu3 = &GPURef{Index: 3, UUID: "GPU-3c9a1e2f-0000-4000-8000-000000000003", PCIBusID: "00000000:9A:00.0"}

func TestFaultReasonUsesEKSVocabulary(t *testing.T) {
	tests := []struct {
		description string
		fault       Fault
		want        string
	}{
		{"a critical XID is an XID error", Fault{Class: ClassXIDCritical, GPU: gpu3, XID: 48}, "NvidiaXID48Error"},
		{"another XID is an XID warning", Fault{Class: ClassXIDOther, GPU: gpu3, XID: 13}, "NvidiaXID13Warning"},
		{"the class does not make a critical XID a warning", Fault{Class: ClassXIDOther, GPU: gpu3, XID: 79}, "NvidiaXID79Error"},
		{"a lost GPU is XID 79's error", Fault{Class: ClassGPULost, GPU: gpu3}, "NvidiaXID79Error"},
		{"uncorrectable ECC is a double-bit error", Fault{Class: ClassECCUncorrectable, GPU: gpu3, Count: 2}, "NvidiaDoubleBitError"},
		{"a row remap failure is ours", Fault{Class: ClassRowRemapFailure, GPU: gpu3}, "NvidiaRowRemapFailure"},
		{"pending retirement is page retirement", Fault{Class: ClassRetirementPending, GPU: gpu3, Count: 1}, "NvidiaPageRetirement"},
		{"NVLink errors", Fault{Class: ClassNVLinkErrors, GPU: gpu3, Count: 7}, "NvidiaNVLinkError"},
		{"PCIe replays", Fault{Class: ClassPCIeReplays, GPU: gpu3, Count: 9}, "NvidiaPCIeError"},
		{"a missing GPU is a device count mismatch", DeviceCountFault(7, 8, []string{"0000:9a:00.0"}, time.Time{}), "NvidiaDeviceCountMismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			if got := tt.fault.Reason(); got != tt.want {
				t.Errorf("Reason() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFaultMessageNamesTheGPUAndWhatToDo(t *testing.T) {
	const where = "GPU 3 (GPU-3c9a1e2f-0000-4000-8000-000000000003, 00000000:9A:00.0)"
	tests := []struct {
		description string
		fault       Fault
		want        string
	}{
		{
			"an XID says its number, the GPU and its meaning",
			Fault{Class: ClassXIDCritical, GPU: gpu3, XID: 79, Count: 1},
			"XID 79 on " + where + ": the GPU has fallen off the bus: it no longer answers over PCIe; a reset or a reboot is needed, check power and seating if it repeats",
		},
		{
			"a repeated XID says how often",
			Fault{Class: ClassXIDOther, GPU: gpu3, XID: 13, Count: 4},
			"XID 13 on " + where + ": graphics engine exception, usually an application fault such as an out-of-bounds access; restart the application (4 times)",
		},
		{
			"an XID the table does not know says where to look it up",
			Fault{Class: ClassXIDOther, GPU: gpu3, XID: 998, Count: 1},
			"XID 998 on " + where + ": not in this agent's table; see NVIDIA's XID catalog (https://docs.nvidia.com/deploy/xid-errors/)",
		},
		{
			"a lost GPU reads as XID 79 and says NVML lost it",
			Fault{Class: ClassGPULost, GPU: gpu3},
			"XID 79 on " + where + ": the GPU has fallen off the bus: it no longer answers over PCIe; a reset or a reboot is needed, check power and seating if it repeats (NVML answers GPU_IS_LOST)",
		},
		{
			"uncorrectable ECC errors are counted",
			Fault{Class: ClassECCUncorrectable, GPU: gpu3, Count: 2},
			"2 uncorrectable (double-bit) ECC errors on " + where + " since the driver loaded; reset the GPU, replace it if this repeats",
		},
		{
			"one uncorrectable ECC error is singular",
			Fault{Class: ClassECCUncorrectable, GPU: gpu3, Count: 1},
			"1 uncorrectable (double-bit) ECC error on " + where + " since the driver loaded; reset the GPU, replace it if this repeats",
		},
		{
			"a row remap failure says to replace the GPU",
			Fault{Class: ClassRowRemapFailure, GPU: gpu3},
			"row remapping failed on " + where + ": its memory has no spare rows left; replace the GPU",
		},
		{
			"pending retirements are counted",
			Fault{Class: ClassRetirementPending, GPU: gpu3, Count: 3},
			"3 memory pages or rows on " + where + " wait for retirement at the next GPU reset; reset the GPU when it is idle",
		},
		{
			"NVLink errors are counted per window",
			Fault{Class: ClassNVLinkErrors, GPU: gpu3, Count: 12},
			"12 NVLink errors on " + where + " in the last sample window; check the links with nvidia-smi nvlink, reset the GPU if they keep growing",
		},
		{
			"PCIe replays are counted per window",
			Fault{Class: ClassPCIeReplays, GPU: gpu3, Count: 1},
			"1 PCIe replay on " + where + " in the last sample window; check the GPU's seating and riser if they keep growing",
		},
		{
			"a GPU known only by index",
			Fault{Class: ClassRowRemapFailure, GPU: &GPURef{Index: 0}},
			"row remapping failed on GPU 0: its memory has no spare rows left; replace the GPU",
		},
		{
			"a detail is added",
			Fault{Class: ClassRowRemapFailure, GPU: &GPURef{Index: 1, PCIBusID: "0000:07:00.0"}, Detail: "nvidia-smi -q -d ROW_REMAPPER shows Remapping Failure Occurred: Yes"},
			"row remapping failed on GPU 1 (0000:07:00.0): its memory has no spare rows left; replace the GPU; nvidia-smi -q -d ROW_REMAPPER shows Remapping Failure Occurred: Yes",
		},
		{
			"a device count says how many answer and which are missing",
			DeviceCountFault(3, 8, []string{"0000:07:00.0", "0000:0f:00.0"}, time.Time{}),
			"3 of 8 GPUs answer NVML; missing: 0000:07:00.0, 0000:0f:00.0",
		},
		{
			"a device count without the missing ones",
			DeviceCountFault(6, 8, nil, time.Time{}),
			"6 of 8 GPUs answer NVML",
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			if got := tt.fault.Message(); got != tt.want {
				t.Errorf("Message() =\n  %q\nwant\n  %q", got, tt.want)
			}
		})
	}
}

func TestFaultKeyIdentifiesClassGPUAndXID(t *testing.T) {
	faults := []Fault{
		{Class: ClassXIDCritical, GPU: gpu3, XID: 79},
		{Class: ClassXIDCritical, GPU: gpu3, XID: 48},
		{Class: ClassXIDCritical, GPU: &GPURef{Index: 3}, XID: 79},
		{Class: ClassXIDCritical, GPU: &GPURef{Index: 4}, XID: 79},
		{Class: ClassGPULost, GPU: gpu3},
		DeviceCountFault(7, 8, nil, time.Time{}),
	}
	seen := map[string]int{}
	for i, f := range faults {
		if j, dup := seen[f.Key()]; dup {
			t.Errorf("faults %d and %d share the key %q", j, i, f.Key())
		}
		seen[f.Key()] = i
	}
	a := Fault{Class: ClassNVLinkErrors, GPU: gpu3, Count: 1, Since: time.Unix(1, 0)}
	b := Fault{Class: ClassNVLinkErrors, GPU: gpu3, Count: 9, Since: time.Unix(2, 0), Detail: "x"}
	if a.Key() != b.Key() {
		t.Errorf("the same fault with other counts has keys %q and %q", a.Key(), b.Key())
	}
}
