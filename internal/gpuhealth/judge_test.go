package gpuhealth

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestJudgeWithoutFaultsIsReady(t *testing.T) {
	v := Judge(nil, DefaultFatal())
	if v.Status != corev1.ConditionTrue || v.Reason != ReasonReady || v.Message != ReadyMessage {
		t.Errorf("Judge(no faults) = %s/%s %q, want True/%s %q", v.Status, v.Reason, v.Message, ReasonReady, ReadyMessage)
	}
	if len(v.Unhealthy) != 0 || len(v.Degraded) != 0 {
		t.Errorf("Judge(no faults) lists unhealthy %v, degraded %v", v.Unhealthy, v.Degraded)
	}
}

func TestJudgeDegradingFaultsKeepTheConditionTrue(t *testing.T) {
	replays := Fault{Class: ClassPCIeReplays, GPU: &GPURef{Index: 1}, Count: 5}
	v := Judge([]Fault{replays}, DefaultFatal())
	if v.Status != corev1.ConditionTrue || v.Reason != ReasonReady {
		t.Fatalf("a degrading fault gave %s/%s, want True/%s", v.Status, v.Reason, ReasonReady)
	}
	if want := "GPUs usable but degraded: " + replays.Message(); v.Message != want {
		t.Errorf("message %q, want %q", v.Message, want)
	}
	if len(v.Unhealthy) != 0 {
		t.Errorf("a degrading fault marked GPUs unhealthy: %v", v.Unhealthy)
	}
	if len(v.Degraded) != 1 || v.Degraded[0].Key() != replays.Key() {
		t.Errorf("Degraded = %v, want the replays", v.Degraded)
	}
}

func TestJudgeFatalFaultsTurnTheConditionFalse(t *testing.T) {
	lost := Fault{Class: ClassGPULost, GPU: &GPURef{Index: 5, UUID: "GPU-5"}}
	ecc := Fault{Class: ClassECCUncorrectable, GPU: &GPURef{Index: 2, UUID: "GPU-2"}, Count: 1}
	xid := Fault{Class: ClassXIDCritical, GPU: &GPURef{Index: 2, UUID: "GPU-2"}, XID: 48, Count: 1}
	replays := Fault{Class: ClassPCIeReplays, GPU: &GPURef{Index: 0, UUID: "GPU-0"}, Count: 5}
	count := DeviceCountFault(7, 8, []string{"0000:9a:00.0"}, time.Time{})

	v := Judge([]Fault{replays, lost, ecc, xid, count}, DefaultFatal())
	if v.Status != corev1.ConditionFalse {
		t.Fatalf("status %s, want False", v.Status)
	}
	// The node fault first, then by GPU index, then by class order.
	if v.Reason != ReasonDeviceCountMismatch {
		t.Errorf("reason %s, want the first fatal fault's %s", v.Reason, ReasonDeviceCountMismatch)
	}
	wantMsg := strings.Join([]string{count.Message(), xid.Message(), ecc.Message(), lost.Message(), replays.Message()}, "; ")
	if v.Message != wantMsg {
		t.Errorf("message\n  %q\nwant (fatal first, by GPU index, then degrading)\n  %q", v.Message, wantMsg)
	}
	wantUnhealthy := []UnhealthyGPU{
		{GPURef: GPURef{Index: 2, UUID: "GPU-2"}, Reason: "NvidiaXID48Error"},
		{GPURef: GPURef{Index: 5, UUID: "GPU-5"}, Reason: "NvidiaXID79Error"},
	}
	if !slices.Equal(v.Unhealthy, wantUnhealthy) {
		t.Errorf("Unhealthy = %+v, want %+v (each GPU once, by index, its first fault's reason)", v.Unhealthy, wantUnhealthy)
	}
	if len(v.Degraded) != 1 || v.Degraded[0].Key() != replays.Key() {
		t.Errorf("Degraded = %v, want the replays", v.Degraded)
	}
}

func TestJudgeIsDeterministic(t *testing.T) {
	faults := []Fault{
		{Class: ClassXIDCritical, GPU: &GPURef{Index: 1}, XID: 79},
		{Class: ClassXIDCritical, GPU: &GPURef{Index: 1}, XID: 48},
		{Class: ClassXIDCritical, GPU: &GPURef{Index: 0}, XID: 95},
		{Class: ClassNVLinkErrors, GPU: &GPURef{Index: 3}, Count: 2},
		{Class: ClassNVLinkErrors, GPU: &GPURef{Index: 2}, Count: 2},
	}
	want := Judge(faults, DefaultFatal())
	for i := range 10 {
		shuffled := slices.Clone(faults)
		for j := range shuffled {
			k := (j*7 + i) % len(shuffled)
			shuffled[j], shuffled[k] = shuffled[k], shuffled[j]
		}
		if got := Judge(shuffled, DefaultFatal()); !got.SameAs(want) {
			t.Fatalf("order %d gave\n  %q\nwant\n  %q", i, got.Message, want.Message)
		}
	}
	if !strings.HasPrefix(want.Message, "XID 95 on GPU 0") || want.Reason != "NvidiaXID95Error" {
		t.Errorf("the first fatal fault is not GPU 0's: %s %q", want.Reason, want.Message)
	}
}

func TestJudgeHonoursTheFatalSetting(t *testing.T) {
	nvlink := Fault{Class: ClassNVLinkErrors, GPU: &GPURef{Index: 4}, Count: 3}
	xid := Fault{Class: ClassXIDCritical, GPU: &GPURef{Index: 4}, XID: 79}

	if v := Judge([]Fault{nvlink}, append(DefaultFatal(), ClassNVLinkErrors)); v.Status != corev1.ConditionFalse || v.Reason != ReasonNVLinkError {
		t.Errorf("nvlink_errors made fatal gave %s/%s, want False/%s", v.Status, v.Reason, ReasonNVLinkError)
	}
	if v := Judge([]Fault{xid}, nil); v.Status != corev1.ConditionTrue || !strings.Contains(v.Message, "XID 79") {
		t.Errorf("with no fatal classes XID 79 gave %s %q, want True naming the XID", v.Status, v.Message)
	}
}

func TestJudgeKeepsTheMessageShort(t *testing.T) {
	var faults []Fault
	for i := range 40 {
		faults = append(faults, Fault{Class: ClassXIDCritical, GPU: &GPURef{Index: i, UUID: fmt.Sprintf("GPU-%08d-aaaa-bbbb-cccc-dddddddddddd", i), PCIBusID: "00000000:9A:00.0"}, XID: 79})
	}
	v := Judge(faults, DefaultFatal())
	if len(v.Message) > MaxMessageLength {
		t.Errorf("message is %d bytes, more than %d", len(v.Message), MaxMessageLength)
	}
	kept := strings.Count(v.Message, "XID 79 on")
	if want := fmt.Sprintf("; … and %d more", 40-kept); !strings.HasSuffix(v.Message, want) {
		t.Errorf("message %q does not end in %q", v.Message, want)
	}
	if kept == 0 {
		t.Error("the message kept none of the faults")
	}
	if len(v.Unhealthy) != 40 {
		t.Errorf("Unhealthy lists %d GPUs, want all 40 (only the message is cut)", len(v.Unhealthy))
	}
}

func TestJudgeCutsOneLongMessage(t *testing.T) {
	long := Fault{Class: ClassRowRemapFailure, GPU: &GPURef{Index: 0}, Detail: strings.Repeat("é", MaxMessageLength)}
	other := Fault{Class: ClassRowRemapFailure, GPU: &GPURef{Index: 1}}
	v := Judge([]Fault{long, other}, DefaultFatal())
	if len(v.Message) > MaxMessageLength {
		t.Errorf("message is %d bytes, more than %d", len(v.Message), MaxMessageLength)
	}
	if !strings.HasPrefix(v.Message, "row remapping failed on GPU 0") || !strings.HasSuffix(v.Message, "…; … and 1 more") {
		t.Errorf("message %q: want the first fault cut with … and the second counted", v.Message)
	}
	if !utf8Valid(v.Message) {
		t.Errorf("the cut split a character: %q", v.Message)
	}
}

func TestVerdictSameAs(t *testing.T) {
	base := Verdict{Status: corev1.ConditionFalse, Reason: "NvidiaXID79Error", Message: "m",
		Unhealthy: []UnhealthyGPU{{GPURef: GPURef{Index: 1}, Reason: "NvidiaXID79Error"}}}
	same := base
	same.Unhealthy = slices.Clone(base.Unhealthy)
	same.Degraded = []Fault{{Class: ClassPCIeReplays}}
	if !base.SameAs(same) {
		t.Error("verdicts differing only in Degraded are not the same")
	}
	for name, change := range map[string]func(*Verdict){
		"status":  func(v *Verdict) { v.Status = corev1.ConditionUnknown },
		"reason":  func(v *Verdict) { v.Reason = "NvidiaXID48Error" },
		"message": func(v *Verdict) { v.Message = "n" },
		"unhealthy": func(v *Verdict) {
			v.Unhealthy = append(slices.Clone(v.Unhealthy), UnhealthyGPU{GPURef: GPURef{Index: 2}})
		},
	} {
		other := base
		other.Unhealthy = slices.Clone(base.Unhealthy)
		change(&other)
		if base.SameAs(other) {
			t.Errorf("verdicts with another %s are the same", name)
		}
	}
}

func TestUnknownIsNeverFalse(t *testing.T) {
	v := Unknown(ReasonDriverNotLoaded, "NVML cannot load libnvidia-ml.so.1")
	if v.Status != corev1.ConditionUnknown || v.Reason != ReasonDriverNotLoaded || v.Message != "NVML cannot load libnvidia-ml.so.1" {
		t.Errorf("Unknown() = %+v", v)
	}
}

// The Event message "<Reason>: <Message>" must fit the API server's 1024-byte
// note limit for any reason the agent writes.
func TestMessagesFitAnEventNote(t *testing.T) {
	reasons := []string{ReasonReady, ReasonDoubleBitError, ReasonNVLinkError, ReasonPCIeError, ReasonPageRetirement,
		ReasonDeviceCountMismatch, ReasonRowRemapFailure, ReasonDriverNotLoaded, ReasonNoGPU, ReasonNVMLError, XIDErrorReason(999), XIDWarningReason(999)}
	for _, r := range reasons {
		if n := len(r) + len(": ") + MaxMessageLength; n > 1024 {
			t.Errorf("an Event for %s can be %d bytes, more than 1024", r, n)
		}
	}
}
