package gpuhealth

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// NodeHealth is a node's GPU health as the cluster side reads it.
type NodeHealth struct {
	// Reported: the node has the AcceleratedHardwareReady condition.
	Reported        bool
	Status          corev1.ConditionStatus
	Reason, Message string
	// Since is the condition's LastTransitionTime.
	Since time.Time
	// Unhealthy lists the GPUs the annotation AnnotationUnhealthyGPUs
	// names; empty when it is absent or cannot be read.
	Unhealthy []UnhealthyGPU
}

// ReadNode reads the condition and the per-GPU annotation from a node. An
// annotation that cannot be read leaves Unhealthy empty and keeps the
// condition.
func ReadNode(node *corev1.Node) NodeHealth {
	var h NodeHealth
	if node == nil {
		return h
	}
	for _, c := range node.Status.Conditions {
		if c.Type != ConditionType {
			continue
		}
		h.Reported = true
		h.Status, h.Reason, h.Message = c.Status, c.Reason, c.Message
		h.Since = c.LastTransitionTime.Time
		break
	}
	if gpus, err := DecodeUnhealthy(node.Annotations[AnnotationUnhealthyGPUs]); err == nil {
		h.Unhealthy = gpus
	}
	return h
}

// EncodeUnhealthy is the annotation's value for gpus: a JSON list, "" for
// none.
func EncodeUnhealthy(gpus []UnhealthyGPU) string {
	if len(gpus) == 0 {
		return ""
	}
	b, err := json.Marshal(gpus)
	if err != nil {
		// A slice of plain structs always marshals.
		panic(fmt.Sprintf("encoding unhealthy GPUs: %v", err))
	}
	return string(b)
}

// DecodeUnhealthy reads the annotation's value; "" is none.
func DecodeUnhealthy(s string) ([]UnhealthyGPU, error) {
	if s == "" {
		return nil, nil
	}
	var gpus []UnhealthyGPU
	if err := json.Unmarshal([]byte(s), &gpus); err != nil {
		return nil, fmt.Errorf("reading annotation %s: not a JSON list of GPUs (%w)", AnnotationUnhealthyGPUs, err)
	}
	return gpus, nil
}
