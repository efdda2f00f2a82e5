package gpuhealth

import (
	"strings"
	"testing"
)

func TestParseFaultClassReadsEveryClass(t *testing.T) {
	for _, c := range AllClasses() {
		got, err := ParseFaultClass(string(c))
		if err != nil || got != c {
			t.Errorf("ParseFaultClass(%q) = %q, %v", c, got, err)
		}
	}
}

func TestParseFaultClassErrorListsValidNames(t *testing.T) {
	_, err := ParseFaultClass("xid79")
	if err == nil {
		t.Fatal("ParseFaultClass(xid79) succeeded")
	}
	for _, c := range AllClasses() {
		if !strings.Contains(err.Error(), string(c)) {
			t.Errorf("error %q does not list the valid class %s", err, c)
		}
	}
}

func TestDefaultFatal(t *testing.T) {
	want := []FaultClass{ClassXIDCritical, ClassGPULost, ClassECCUncorrectable, ClassRowRemapFailure, ClassDeviceCount}
	got := DefaultFatal()
	if strings.Join(classStrings(got), ",") != strings.Join(classStrings(want), ",") {
		t.Errorf("DefaultFatal() = %v, want %v", got, want)
	}
	got[0] = ClassPCIeReplays
	if DefaultFatal()[0] != ClassXIDCritical {
		t.Error("DefaultFatal returns a slice its caller can change for everyone")
	}
	all := AllClasses()
	all[0] = ClassPCIeReplays
	if AllClasses()[0] != ClassXIDCritical {
		t.Error("AllClasses returns a slice its caller can change for everyone")
	}
}

func classStrings(cs []FaultClass) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}
