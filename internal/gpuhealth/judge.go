package gpuhealth

import (
	"cmp"
	"fmt"
	"slices"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// ReadyMessage is the healthy condition's message (in the style of EKS's
// "Monitoring for the Nvidia GPU system is active").
const ReadyMessage = "GPU health monitoring through NVML is active; no GPU faults"

// MaxMessageLength bounds the condition message (in bytes) so that the
// Event message "<Reason>: <Message>" fits the API server's limit on an
// event's note: NoteLengthLimit = 1024 bytes in k8s.io/kubernetes
// pkg/apis/core/validation/events.go (the longest reason,
// "NvidiaDeviceCountMismatch: ", leaves room to spare).
const MaxMessageLength = 960

// Judge turns the standing faults into a verdict. With a fault of a class
// in fatal: False, the reason of the first fatal fault, every fault's
// message (fatal first, then degrading; each by GPU index) "; "-joined.
// Without: True, ReasonReady, and a message naming any degradation.
func Judge(faults []Fault, fatal []FaultClass) Verdict {
	var bad, degraded []Fault
	for _, f := range faults {
		if slices.Contains(fatal, f.Class) {
			bad = append(bad, f)
		} else {
			degraded = append(degraded, f)
		}
	}
	sortFaults(bad)
	sortFaults(degraded)

	if len(bad) == 0 {
		v := Verdict{Status: corev1.ConditionTrue, Reason: ReasonReady, Message: ReadyMessage, Degraded: degraded}
		if len(degraded) > 0 {
			v.Message = joinMessages("GPUs usable but degraded: ", degraded)
		}
		return v
	}
	v := Verdict{
		Status:    corev1.ConditionFalse,
		Reason:    bad[0].Reason(),
		Message:   joinMessages("", append(slices.Clone(bad), degraded...)),
		Unhealthy: unhealthyGPUs(bad),
		Degraded:  degraded,
	}
	return v
}

// sortFaults orders faults: node faults first, then by GPU index, class,
// XID.
func sortFaults(faults []Fault) {
	slices.SortStableFunc(faults, func(a, b Fault) int {
		return cmp.Or(
			cmp.Compare(gpuIndex(a), gpuIndex(b)),
			cmp.Compare(a.Class.rank(), b.Class.rank()),
			cmp.Compare(a.XID, b.XID),
		)
	})
}

func gpuIndex(f Fault) int {
	if f.GPU == nil {
		return -1
	}
	return f.GPU.Index
}

// unhealthyGPUs lists each GPU of the (sorted) fatal faults once, with the
// reason of its first fault.
func unhealthyGPUs(bad []Fault) []UnhealthyGPU {
	var out []UnhealthyGPU
	for _, f := range bad {
		if f.GPU == nil {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Index == f.GPU.Index {
			continue
		}
		out = append(out, UnhealthyGPU{GPURef: *f.GPU, Reason: f.Reason()})
	}
	return out
}

// joinMessages joins the faults' messages after prefix with "; ". Where
// the whole would pass MaxMessageLength it keeps the first ones that fit
// and ends in "; … and N more" (the first message is cut if it alone is
// too long).
func joinMessages(prefix string, faults []Fault) string {
	msg := prefix
	for i, f := range faults {
		part := f.Message()
		if i > 0 {
			part = "; " + part
		}
		tail := ""
		if rest := len(faults) - i - 1; rest > 0 {
			tail = moreTail(rest)
		}
		if len(msg)+len(part)+len(tail) <= MaxMessageLength {
			msg += part
			continue
		}
		if i == 0 {
			// Nothing kept yet: keep as much of the first as fits.
			return msg + truncate(part, MaxMessageLength-len(msg)-len(tail)) + tail
		}
		// The previous step left room for exactly this tail.
		return msg + moreTail(len(faults)-i)
	}
	return msg
}

func moreTail(n int) string { return fmt.Sprintf("; … and %d more", n) }

// truncate cuts s to at most n bytes on a rune boundary, ending in "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := max(n-len(ellipsis), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
