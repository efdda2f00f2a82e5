package gpuhealth

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// UnhealthyGPU is one GPU with a fatal fault, as the node annotation
// AnnotationUnhealthyGPUs lists it.
type UnhealthyGPU struct {
	GPURef
	Reason string `json:"reason"`
}

// Verdict is what the condition should say about the node's GPUs.
type Verdict struct {
	Status          corev1.ConditionStatus
	Reason, Message string
	// Unhealthy lists the GPUs with a fatal fault, by index.
	Unhealthy []UnhealthyGPU
	// Degraded lists the non-fatal faults standing, in judging order.
	Degraded []Fault
}

// Unknown is the verdict when the agent cannot tell (no driver, no GPU,
// NVML failing): status Unknown, never False, so that repair does not
// replace a node for a missing driver.
func Unknown(reason, message string) Verdict {
	return Verdict{Status: corev1.ConditionUnknown, Reason: reason, Message: message}
}

// SameAs reports whether v and o publish the same thing: status, reason,
// message and unhealthy GPUs.
func (v Verdict) SameAs(o Verdict) bool {
	return v.Status == o.Status && v.Reason == o.Reason && v.Message == o.Message &&
		slices.Equal(v.Unhealthy, o.Unhealthy)
}

// clone copies v and its slices.
func (v Verdict) clone() Verdict {
	v.Unhealthy = slices.Clone(v.Unhealthy)
	v.Degraded = slices.Clone(v.Degraded)
	return v
}
