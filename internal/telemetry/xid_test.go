package telemetry

import (
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
)

func TestXIDMeaning(t *testing.T) {
	tests := []struct {
		description string
		xid         uint64
		mentions    string
	}{
		{"13 is a graphics engine exception", 13, "graphics engine exception"},
		{"31 is a memory page fault", 31, "page fault"},
		{"32 is a corrupted push buffer", 32, "push buffer"},
		{"43 is a stopped channel", 43, "stopped processing"},
		{"45 is a preemptive cleanup", 45, "preemptive cleanup"},
		{"48 is a double-bit ECC error", 48, "double-bit"},
		{"61 is a micro-controller breakpoint", 61, "micro-controller breakpoint"},
		{"62 is a micro-controller halt", 62, "micro-controller halt"},
		{"63 is a page retirement or row remap recorded", 63, "row remapping recorded"},
		{"64 is a page retirement or row remap failure", 64, "row remapping failed"},
		{"68 is a video decoder exception", 68, "NVDEC"},
		{"69 is a graphics engine class error", 69, "class error"},
		{"74 is an NVLink error", 74, "NVLink"},
		{"79 is a GPU fallen off the bus", 79, "fallen off the bus"},
		{"92 is a high single-bit ECC rate", 92, "single-bit"},
		{"94 is a contained ECC error", 94, "contained uncorrectable ECC"},
		{"95 is an uncontained ECC error", 95, "uncontained uncorrectable ECC"},
		{"109 is a context switch timeout", 109, "context switch timeout"},
		{"119 is a GSP timeout", 119, "GSP"},
		{"120 is a GSP error", 120, "GSP"},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			meaning, ok := XIDMeaning(tt.xid)
			if !ok || !strings.Contains(meaning, tt.mentions) {
				t.Errorf("XIDMeaning(%d) = %q, %v; want it to mention %q", tt.xid, meaning, ok, tt.mentions)
			}
		})
	}
	if meaning, ok := XIDMeaning(998); ok {
		t.Errorf("XIDMeaning(998) = %q: an unknown XID has no meaning", meaning)
	}
	if got := describeXID(998); !strings.Contains(got, "docs.nvidia.com/deploy/xid-errors") {
		t.Errorf("an unknown XID's detail %q does not say where to look it up", got)
	}
}

// The telemetry words an XID as the health agent's condition does.
func TestXIDMeaningIsGPUHealths(t *testing.T) {
	for xid := uint64(0); xid <= 1000; xid++ {
		got, gotOK := XIDMeaning(xid)
		want, wantOK := gpuhealth.XIDMeaning(xid)
		if got != want || gotOK != wantOK {
			t.Errorf("XIDMeaning(%d) = %q, %v; gpuhealth says %q, %v", xid, got, gotOK, want, wantOK)
		}
	}
}
