package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// toSpec turns a plan or a state (all values known) into what to run. An
// error means a value the schema validates did not parse: a bug.
func (m *workloadModel) toSpec() (kube.WorkloadSpec, error) {
	s := kube.WorkloadSpec{
		Kind:        kube.WorkloadKind(m.Kind.ValueString()),
		Namespace:   m.namespace(),
		Name:        m.name(),
		Labels:      m.Metadata.Labels,
		Annotations: m.Metadata.Annotations,
	}
	var err error
	s.Pod, err = m.podSpec()
	if err != nil {
		return s, err
	}
	switch s.Kind {
	case kube.WorkloadJob:
		j := m.jobSettings()
		s.Job = kube.JobSettings{
			BackoffLimit:            int32Pointer(j.BackoffLimit),
			Completions:             int32Pointer(j.Completions),
			Parallelism:             int32Pointer(j.Parallelism),
			ActiveDeadlineSeconds:   j.ActiveDeadlineSeconds.ValueInt64Pointer(),
			TTLSecondsAfterFinished: int32Pointer(j.TTLSecondsAfterFinished),
			RestartPolicy:           corev1.RestartPolicy(j.RestartPolicy.ValueString()),
			Suspend:                 j.Suspend.ValueBool(),
		}
	case kube.WorkloadDeployment:
		d := m.deploymentSettings()
		s.Deployment = kube.DeploymentSettings{
			Replicas: int32Pointer(d.Replicas),
			Strategy: appsv1.DeploymentStrategyType(d.Strategy.ValueString()),
		}
	}
	return s, nil
}

func (m *workloadModel) podSpec() (kube.WorkloadPod, error) {
	p := kube.WorkloadPod{
		GPU:              m.GPU.toSpec(),
		ServiceAccount:   m.ServiceAccount.ValueString(),
		ImagePullSecrets: m.ImagePullSecrets,
		RuntimeClassName: m.RuntimeClassName.ValueStringPointer(),
		NodeSelector:     m.NodeSelector,
		Tolerations:      tolerationsToKube(m.Tolerations),
	}
	var err error
	if p.ShmSize, err = optionalQuantity("shm_size", m.ShmSize); err != nil {
		return p, err
	}
	if p.Container, err = m.Container.toSpec(); err != nil {
		return p, err
	}
	for _, v := range m.Volumes {
		p.Volumes = append(p.Volumes, kube.ClaimVolume{
			Name:      v.Name.ValueString(),
			ClaimName: v.ClaimName.ValueString(),
			MountPath: v.MountPath.ValueString(),
			ReadOnly:  v.ReadOnly.ValueBool(),
		})
	}
	return p, nil
}

func (c *workloadContainerModel) toSpec() (kube.WorkloadContainer, error) {
	out := kube.WorkloadContainer{
		Name:       c.Name.ValueString(),
		Image:      c.Image.ValueString(),
		Command:    c.Command,
		Args:       c.Args,
		Env:        c.Env,
		WorkingDir: c.WorkingDir.ValueString(),
	}
	for _, q := range []struct {
		attr   string
		value  types.String
		target **resource.Quantity
	}{
		{"container.cpu_request", c.CPURequest, &out.CPURequest},
		{"container.memory_request", c.MemoryRequest, &out.MemoryRequest},
		{"container.cpu_limit", c.CPULimit, &out.CPULimit},
		{"container.memory_limit", c.MemoryLimit, &out.MemoryLimit},
	} {
		parsed, err := optionalQuantity(q.attr, q.value)
		if err != nil {
			return out, err
		}
		*q.target = parsed
	}
	return out, nil
}

func (g *workloadGPUModel) toSpec() kube.WorkloadGPU {
	first := gpuChoiceModel{Count: g.Count, Products: g.Products, MinMemoryGiB: g.MinMemoryGiB, MinComputeCapability: g.MinComputeCapability, MIGProfile: g.MIGProfile}.toSpec()
	out := kube.WorkloadGPU{
		Count:        first.Count,
		Products:     first.Products,
		MinMemoryGiB: first.MinMemoryGiB,
		MinCompute:   first.MinCompute,
		Shared:       g.Shared.ValueBool(),
		MIGProfile:   first.MIGProfile,
	}
	if g.Allocation.ValueString() == string(kube.AllocateDRA) {
		out.Allocation = kube.AllocateDRA
	}
	if v, err := kube.ParseCUDAVersion(g.MinCUDAVersion.ValueString()); err == nil {
		out.MinCUDA = &v
	}
	for _, a := range g.Alternatives {
		out.Alternatives = append(out.Alternatives, a.toSpec())
	}
	return out
}

func (c gpuChoiceModel) toSpec() kube.GPUChoice {
	out := kube.GPUChoice{
		Count:        c.Count.ValueInt64(),
		Products:     c.Products,
		MinMemoryGiB: c.MinMemoryGiB.ValueInt64(),
		MIGProfile:   c.MIGProfile.ValueString(),
	}
	if cc, err := kube.ParseComputeCapability(c.MinComputeCapability.ValueString()); err == nil {
		out.MinCompute = &cc
	}
	return out
}

// optionalQuantity parses a quantity attribute; null or "" is nil.
func optionalQuantity(attr string, v types.String) (*resource.Quantity, error) {
	if v.ValueString() == "" {
		return nil, nil
	}
	q, err := resource.ParseQuantity(v.ValueString())
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", attr, v.ValueString(), err)
	}
	return &q, nil
}

func int32Pointer(v types.Int64) *int32 {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	return ptr.To(int32(v.ValueInt64()))
}
