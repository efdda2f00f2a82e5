package gpuhealth

import (
	"slices"
	"testing"
)

// eksWellKnownXIDs is WellKnownXidCodes as monitors/nvidia/dcgm/dcgm_policies.go
// of github.com/aws/eks-node-monitoring-agent declares it.
var eksWellKnownXIDs = []uint64{46, 48, 54, 62, 63, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 142, 143, 151, 155, 156, 158}

func TestCriticalXIDIsEKSWellKnownList(t *testing.T) {
	for xid := uint64(0); xid <= 1000; xid++ {
		want := slices.Contains(eksWellKnownXIDs, xid)
		if got := CriticalXID(xid); got != want {
			t.Errorf("CriticalXID(%d) = %v, want %v (EKS's WellKnownXidCodes)", xid, got, want)
		}
	}
}

func TestEveryCriticalXIDHasAMeaningAndABucket(t *testing.T) {
	buckets := []string{"RESET_GPU", "WORKFLOW_XID_48", "WORKFLOW_NVLINK_ERR", "RESTART_BM", "CHECK_MECHANICALS", "RESTART_VM", "CONTACT_SUPPORT", "IGNORE"}
	for _, xid := range eksWellKnownXIDs {
		if meaning, ok := XIDMeaning(xid); !ok || meaning == "" {
			t.Errorf("XIDMeaning(%d) is missing: every critical XID's message must say what it means", xid)
		}
		if b := criticalXIDs[xid]; !slices.Contains(buckets, b) {
			t.Errorf("XID %d's resolution bucket %q is not one of NVIDIA's %v", xid, b, buckets)
		}
	}
}

func TestXIDMeaningOfCodesEKSAdded(t *testing.T) {
	tests := []struct {
		description string
		xid         uint64
		mentions    string
	}{
		{"54 is auxiliary power", 54, "auxiliary power"},
		{"110 is a security fault", 110, "security fault"},
		{"136 is link training", 136, "link training failed"},
		{"142 is the NVENC3 encoder", 142, "NVENC3"},
		{"151 is key rotation", 151, "key rotation"},
		{"155 is an NVLink software-defined error", 155, "NVLink software-defined"},
		{"156 is a resource retirement", 156, "resource retirement"},
		{"158 is a fatal timeout", 158, "fatal timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			meaning, _ := XIDMeaning(tt.xid)
			if !contains(meaning, tt.mentions) {
				t.Errorf("XIDMeaning(%d) = %q; want it to mention %q", tt.xid, meaning, tt.mentions)
			}
		})
	}
	if meaning, ok := XIDMeaning(998); ok {
		t.Errorf("XIDMeaning(998) = %q: an unknown XID has no meaning", meaning)
	}
}

func TestXIDReasonsFollowEKSTemplates(t *testing.T) {
	if got := XIDErrorReason(79); got != "NvidiaXID79Error" {
		t.Errorf("XIDErrorReason(79) = %q, want NvidiaXID79Error (template NvidiaXID%%dError)", got)
	}
	if got := XIDWarningReason(13); got != "NvidiaXID13Warning" {
		t.Errorf("XIDWarningReason(13) = %q, want NvidiaXID13Warning (template NvidiaXID%%dWarning)", got)
	}
}
