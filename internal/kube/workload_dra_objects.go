package kube

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationGPURequest is on the ResourceClaimTemplate of a DRA workload:
// the gpu criteria it was built from, as JSON, so that a read gives back
// the criteria rather than CEL. A template's spec cannot change, so the
// annotation and the spec stay together.
const AnnotationGPURequest = "gpu.gpuinfra.io/gpu-request"

// gpuRequestRecord is what AnnotationGPURequest holds.
type gpuRequestRecord struct {
	Choices []GPUChoice  `json:"choices"`
	MinCUDA *CUDAVersion `json:"minCUDA,omitempty"`
}

// ClaimTemplateName is the name of the ResourceClaimTemplate of a DRA
// workload: the workload's own (a different kind, so no clash).
func (s WorkloadSpec) ClaimTemplateName() string { return s.Name }

// ClaimTemplateID is namespace/name of a DRA workload's
// ResourceClaimTemplate, "" for a device-plugin workload.
func (s WorkloadSpec) ClaimTemplateID() string {
	if !s.Pod.GPU.DRA() {
		return ""
	}
	return s.Namespace + "/" + s.ClaimTemplateName()
}

// BuildResourceClaimTemplate is the ResourceClaimTemplate of a DRA
// workload's pods: one request for the gpu block's devices (its choices
// in order as firstAvailable subrequests), marked as owner's like the
// workload.
func BuildResourceClaimTemplate(s WorkloadSpec) (*resourcev1.ResourceClaimTemplate, error) {
	g := s.Pod.GPU
	record, err := json.Marshal(gpuRequestRecord{Choices: g.Choices(), MinCUDA: g.MinCUDA})
	if err != nil {
		return nil, err
	}
	annotations := withOwner(map[string]string{AnnotationGPURequest: string(record)}, s.Owner)
	return &resourcev1.ResourceClaimTemplate{
		TypeMeta: metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        s.ClaimTemplateName(),
			Namespace:   s.Namespace,
			Labels:      s.workloadLabels(),
			Annotations: annotations,
		},
		Spec: resourcev1.ResourceClaimTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: s.workloadLabels()},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
				Requests: []resourcev1.DeviceRequest{g.draRequest()},
			}},
		},
	}, nil
}

// claimTemplateOf is the name of the ResourceClaimTemplate a pod template's
// GPU claim comes from, "" when it has none.
func claimTemplateOf(spec *corev1.PodSpec) string {
	for _, c := range spec.ResourceClaims {
		if c.Name == DRAClaimName && c.ResourceClaimTemplateName != nil {
			return *c.ResourceClaimTemplateName
		}
	}
	return ""
}

// gpuFromClaimTemplate reads the gpu criteria back from a template this
// package built; ok is false for one without a readable record (made by
// someone else, or edited).
func gpuFromClaimTemplate(t *resourcev1.ResourceClaimTemplate) (WorkloadGPU, bool) {
	var r gpuRequestRecord
	if err := json.Unmarshal([]byte(t.Annotations[AnnotationGPURequest]), &r); err != nil || len(r.Choices) == 0 {
		return WorkloadGPU{Allocation: AllocateDRA}, false
	}
	first := r.Choices[0]
	g := WorkloadGPU{
		Count: first.Count, Products: first.Products, MinMemoryGiB: first.MinMemoryGiB, MinCompute: first.MinCompute,
		MIGProfile: first.MIGProfile, MinCUDA: r.MinCUDA, Allocation: AllocateDRA,
	}
	if len(r.Choices) > 1 {
		g.Alternatives = r.Choices[1:]
	}
	return g, true
}
