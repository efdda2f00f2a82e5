package provider

import (
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// setFromSpec sets m's configuration attributes to what the cluster has, so
// a plan shows what changed out of band. m starts as the prior state (after
// an import, only kind and metadata are set); where the cluster spells a
// value differently but means the same ("0.5" and "500m"), the state's
// spelling is kept, and an empty collection stays as the state had it
// (null or empty).
func (m *workloadModel) setFromSpec(s kube.WorkloadSpec) {
	m.Kind = types.StringValue(string(s.Kind))
	m.ID = types.StringValue(s.ID())
	if m.Metadata == nil {
		m.Metadata = &workloadMetadataModel{}
	}
	m.Metadata.Name = types.StringValue(s.Name)
	m.Metadata.Namespace = types.StringValue(s.Namespace)
	m.Metadata.Labels = keepEmptyMap(s.Labels, m.Metadata.Labels)
	m.Metadata.Annotations = keepEmptyMap(s.Annotations, m.Metadata.Annotations)
	m.setPodFromSpec(s.Pod)
	m.ClaimTemplate = stringOrNull(s.ClaimTemplateID())

	switch s.Kind {
	case kube.WorkloadJob:
		j := s.Job
		settings := workloadJobModel{
			BackoffLimit:            int64FromInt32(j.BackoffLimit, defaultBackoffLimit),
			Completions:             int64FromInt32(j.Completions, 1),
			Parallelism:             int64FromInt32(j.Parallelism, 1),
			ActiveDeadlineSeconds:   types.Int64PointerValue(j.ActiveDeadlineSeconds),
			TTLSecondsAfterFinished: types.Int64Null(),
			RestartPolicy:           types.StringValue(string(j.RestartPolicy)),
			Suspend:                 types.BoolValue(j.Suspend),
		}
		if j.TTLSecondsAfterFinished != nil {
			settings.TTLSecondsAfterFinished = types.Int64Value(int64(*j.TTLSecondsAfterFinished))
		}
		if m.Job != nil || settings != defaultJobSettings() {
			m.Job = &settings
		}
		m.Deployment = nil
	case kube.WorkloadDeployment:
		settings := workloadDeploymentModel{
			Replicas: int64FromInt32(s.Deployment.Replicas, 1),
			Strategy: types.StringValue(string(s.Deployment.Strategy)),
		}
		if m.Deployment != nil || settings != defaultDeploymentSettings() {
			m.Deployment = &settings
		}
		m.Job = nil
	}
	if m.WaitForCompletion.IsNull() {
		m.WaitForCompletion = types.BoolValue(true)
	}
	if m.WaitForRollout.IsNull() {
		m.WaitForRollout = types.BoolValue(true)
	}
}

func (m *workloadModel) setPodFromSpec(p kube.WorkloadPod) {
	m.ServiceAccount = stringOrNull(p.ServiceAccount)
	m.RuntimeClassName = types.StringPointerValue(p.RuntimeClassName)
	m.NodeSelector = keepEmptyMap(p.NodeSelector, m.NodeSelector)
	m.ImagePullSecrets = keepEmptySlice(p.ImagePullSecrets, m.ImagePullSecrets)
	m.Tolerations = keepEmptySlice(tolerationModelsFrom(p.Tolerations), m.Tolerations)
	m.ShmSize = quantityOrNull(p.ShmSize, m.ShmSize)

	if m.Container == nil {
		m.Container = &workloadContainerModel{}
	}
	mc, c := m.Container, p.Container
	mc.Name = types.StringValue(c.Name)
	mc.Image = types.StringValue(c.Image)
	mc.Command = keepEmptySlice(c.Command, mc.Command)
	mc.Args = keepEmptySlice(c.Args, mc.Args)
	mc.Env = keepEmptyMap(c.Env, mc.Env)
	mc.WorkingDir = stringOrNull(c.WorkingDir)
	mc.CPURequest = quantityOrNull(c.CPURequest, mc.CPURequest)
	mc.MemoryRequest = quantityOrNull(c.MemoryRequest, mc.MemoryRequest)
	mc.CPULimit = quantityOrNull(c.CPULimit, mc.CPULimit)
	mc.MemoryLimit = quantityOrNull(c.MemoryLimit, mc.MemoryLimit)

	if m.GPU == nil {
		m.GPU = &workloadGPUModel{}
	}
	g := p.GPU
	m.GPU.Count = types.Int64Value(g.Count)
	m.GPU.Products = keepEmptySlice(g.Products, m.GPU.Products)
	m.GPU.MinMemoryGiB = types.Int64Null()
	if g.MinMemoryGiB > 0 {
		m.GPU.MinMemoryGiB = types.Int64Value(g.MinMemoryGiB)
	}
	m.GPU.MinComputeCapability = types.StringNull()
	if g.MinCompute != nil {
		m.GPU.MinComputeCapability = types.StringValue(g.MinCompute.String())
	}
	m.GPU.Shared = types.BoolValue(g.Shared)
	m.GPU.MIGProfile = stringOrNull(g.MIGProfile)
	m.GPU.Allocation = types.StringValue(string(kube.AllocateDevicePlugin))
	if g.DRA() {
		m.GPU.Allocation = types.StringValue(string(kube.AllocateDRA))
	}
	m.GPU.MinCUDAVersion = types.StringNull()
	if g.MinCUDA != nil {
		m.GPU.MinCUDAVersion = types.StringValue(g.MinCUDA.String())
	}
	alternatives := []gpuChoiceModel{}
	for i, a := range g.Alternatives {
		var prior gpuChoiceModel
		if i < len(m.GPU.Alternatives) {
			prior = m.GPU.Alternatives[i]
		}
		alternatives = append(alternatives, gpuChoiceModelFrom(a, prior))
	}
	m.GPU.Alternatives = alternatives

	volumes := []workloadVolumeModel{}
	for _, v := range p.Volumes {
		volumes = append(volumes, workloadVolumeModel{
			Name:      types.StringValue(v.Name),
			ClaimName: types.StringValue(v.ClaimName),
			MountPath: stringOrNull(v.MountPath),
			ReadOnly:  types.BoolValue(v.ReadOnly),
		})
	}
	m.Volumes = volumes
}

// gpuChoiceModelFrom is an alternative block as read back; prior keeps an
// empty products list empty rather than null.
func gpuChoiceModelFrom(c kube.GPUChoice, prior gpuChoiceModel) gpuChoiceModel {
	out := gpuChoiceModel{
		Count:                types.Int64Value(c.Count),
		Products:             keepEmptySlice(c.Products, prior.Products),
		MinMemoryGiB:         types.Int64Null(),
		MinComputeCapability: types.StringNull(),
		MIGProfile:           stringOrNull(c.MIGProfile),
	}
	if c.MinMemoryGiB > 0 {
		out.MinMemoryGiB = types.Int64Value(c.MinMemoryGiB)
	}
	if c.MinCompute != nil {
		out.MinComputeCapability = types.StringValue(c.MinCompute.String())
	}
	return out
}

// setStatus fills the computed status attributes; nil (the status could
// not be read) makes them null.
func (m *workloadModel) setStatus(s *kube.WorkloadStatus) {
	if s == nil {
		m.workloadStatusModel = workloadStatusModel{
			Status: types.StringNull(), NodeNames: types.ListNull(types.StringType), StartTime: types.StringNull(),
			CompletionTime: types.StringNull(), Succeeded: types.Int64Null(), Failed: types.Int64Null(),
		}
		return
	}
	names := make([]attr.Value, len(s.NodeNames))
	for i, n := range s.NodeNames {
		names[i] = types.StringValue(n)
	}
	m.workloadStatusModel = workloadStatusModel{
		Status:         types.StringValue(s.Phase),
		NodeNames:      types.ListValueMust(types.StringType, names),
		StartTime:      timeOrNull(s.StartTime),
		CompletionTime: timeOrNull(s.CompletionTime),
		Succeeded:      types.Int64PointerValue(s.Succeeded),
		Failed:         types.Int64PointerValue(s.Failed),
	}
}

// quantityOrNull is q in the state's spelling when that means the same
// amount (see keepQuantitySpelling), or null when q is nil.
func quantityOrNull(q *resource.Quantity, prior types.String) types.String {
	if q == nil {
		return types.StringNull()
	}
	return keepQuantitySpelling(*q, prior)
}

func timeOrNull(t *time.Time) types.String {
	if t == nil {
		return types.StringNull()
	}
	return types.StringValue(t.UTC().Format(time.RFC3339))
}

func int64FromInt32(v *int32, dflt int64) types.Int64 {
	if v == nil {
		return types.Int64Value(dflt)
	}
	return types.Int64Value(int64(*v))
}

// keepEmptySlice returns s, or prior when both are empty, so that a
// configured empty list stays empty and an unset one stays null.
func keepEmptySlice[T any](s, prior []T) []T {
	if len(s) == 0 && len(prior) == 0 {
		return prior
	}
	return s
}

// keepEmptyMap is keepEmptySlice for maps.
func keepEmptyMap(m, prior map[string]string) map[string]string {
	if len(m) == 0 && len(prior) == 0 {
		return prior
	}
	return m
}
