package provider

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// workloadLabel is on every workload and pod this resource makes, with the
// workload's name as value; it is a Deployment's selector.
const workloadLabel = "terraform-provider-gpu/workload"

// The memory-backed emptyDir that shm_size adds.
const (
	shmVolumeName = "dshm"
	shmMountPath  = "/dev/shm"
)

// gpuToleration lets the pods onto nodes tainted as GPU nodes.
var gpuToleration = corev1.Toleration{Key: gpulabels.TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// gpuResourceName is what the gpu block asks for: whole GPUs, a share of a
// time-sliced GPU, or MIG instances of one profile.
func gpuResourceName(g *workloadGPUModel) corev1.ResourceName {
	switch {
	case g.MIGProfile.ValueString() != "":
		return corev1.ResourceName(gpulabels.MIGResourcePrefix + g.MIGProfile.ValueString())
	case g.Shared.ValueBool():
		return gpulabels.SharedResourceName
	}
	return kube.ResourceGPU
}

// gpuNodeAffinity turns the gpu block's criteria into required node
// affinity on GFD labels, or nil when only a count is asked for. Node
// selector terms are ORed and the expressions in a term ANDed, so a minimum
// compute capability M.m with m > 0 becomes two terms, (major > M) OR
// (major = M AND minor > m-1), each carrying the other criteria.
func gpuNodeAffinity(g *workloadGPUModel) (*corev1.Affinity, error) {
	var common []corev1.NodeSelectorRequirement
	if len(g.Products) > 0 {
		values := slices.Clone(g.Products)
		if g.Shared.ValueBool() {
			for _, p := range g.Products {
				values = append(values, p+gpulabels.SharedProductSuffix)
			}
		}
		common = append(common, corev1.NodeSelectorRequirement{Key: gpulabels.Product, Operator: corev1.NodeSelectorOpIn, Values: values})
	}
	if gib := g.MinMemoryGiB.ValueInt64(); gib > 0 {
		common = append(common, gtRequirement(gpulabels.Memory, gib*1024-1))
	}
	terms := []corev1.NodeSelectorTerm{{MatchExpressions: common}}
	if s := g.MinComputeCapability.ValueString(); s != "" {
		cc, err := kube.ParseComputeCapability(s)
		if err != nil {
			return nil, fmt.Errorf("gpu.min_compute_capability: %w", err)
		}
		if cc.Minor == 0 {
			terms = []corev1.NodeSelectorTerm{{MatchExpressions: withRequirements(common, gtRequirement(gpulabels.ComputeMajor, int64(cc.Major-1)))}}
		} else {
			terms = []corev1.NodeSelectorTerm{
				{MatchExpressions: withRequirements(common, gtRequirement(gpulabels.ComputeMajor, int64(cc.Major)))},
				{MatchExpressions: withRequirements(common,
					corev1.NodeSelectorRequirement{Key: gpulabels.ComputeMajor, Operator: corev1.NodeSelectorOpIn, Values: []string{strconv.Itoa(cc.Major)}},
					gtRequirement(gpulabels.ComputeMinor, int64(cc.Minor-1)))},
			}
		}
	}
	if len(terms[0].MatchExpressions) == 0 {
		return nil, nil
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
	}}, nil
}

func gtRequirement(key string, value int64) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpGt, Values: []string{strconv.FormatInt(value, 10)}}
}

func withRequirements(common []corev1.NodeSelectorRequirement, more ...corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement {
	return append(slices.Clone(common), more...)
}

// workloadLabels are the user's labels plus workloadLabel.
func (m *workloadModel) workloadLabels() map[string]string {
	labels := maps.Clone(m.Metadata.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[workloadLabel] = m.name()
	return labels
}

func (m *workloadModel) objectMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        m.name(),
		Namespace:   m.namespace(),
		Labels:      m.workloadLabels(),
		Annotations: maps.Clone(m.Metadata.Annotations),
	}
}

// podTemplate is the pod every replica or completion runs.
func (m *workloadModel) podTemplate(restartPolicy corev1.RestartPolicy) (corev1.PodTemplateSpec, error) {
	container, err := m.container()
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	affinity, err := gpuNodeAffinity(m.GPU)
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	spec := corev1.PodSpec{
		RestartPolicy:      restartPolicy,
		ServiceAccountName: m.ServiceAccount.ValueString(),
		RuntimeClassName:   m.RuntimeClassName.ValueStringPointer(),
		NodeSelector:       maps.Clone(m.NodeSelector),
		Affinity:           affinity,
		Tolerations:        append(m.tolerations(), gpuToleration),
		Containers:         []corev1.Container{container},
	}
	for _, name := range m.ImagePullSecrets {
		spec.ImagePullSecrets = append(spec.ImagePullSecrets, corev1.LocalObjectReference{Name: name})
	}
	for _, v := range m.Volumes {
		spec.Volumes = append(spec.Volumes, corev1.Volume{
			Name: v.Name.ValueString(),
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: v.ClaimName.ValueString(),
				ReadOnly:  v.ReadOnly.ValueBool(),
			}},
		})
	}
	if s := m.ShmSize.ValueString(); s != "" {
		size, err := resource.ParseQuantity(s)
		if err != nil {
			return corev1.PodTemplateSpec{}, fmt.Errorf("shm_size %q: %w", s, err)
		}
		spec.Volumes = append(spec.Volumes, corev1.Volume{
			Name:         shmVolumeName,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size}},
		})
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: m.workloadLabels(), Annotations: maps.Clone(m.Metadata.Annotations)},
		Spec:       spec,
	}, nil
}

func (m *workloadModel) container() (corev1.Container, error) {
	c := m.Container
	out := corev1.Container{
		Name:       c.Name.ValueString(),
		Image:      c.Image.ValueString(),
		Command:    slices.Clone(c.Command),
		Args:       slices.Clone(c.Args),
		WorkingDir: c.WorkingDir.ValueString(),
		Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{gpuResourceName(m.GPU): *resource.NewQuantity(m.GPU.Count.ValueInt64(), resource.DecimalSI)},
		},
	}
	for _, name := range slices.Sorted(maps.Keys(c.Env)) {
		out.Env = append(out.Env, corev1.EnvVar{Name: name, Value: c.Env[name]})
	}
	for _, q := range []struct {
		attr  string
		value types.String
		list  *corev1.ResourceList
		name  corev1.ResourceName
	}{
		{"container.cpu_request", c.CPURequest, &out.Resources.Requests, corev1.ResourceCPU},
		{"container.memory_request", c.MemoryRequest, &out.Resources.Requests, corev1.ResourceMemory},
		{"container.cpu_limit", c.CPULimit, &out.Resources.Limits, corev1.ResourceCPU},
		{"container.memory_limit", c.MemoryLimit, &out.Resources.Limits, corev1.ResourceMemory},
	} {
		if q.value.ValueString() == "" {
			continue
		}
		parsed, err := resource.ParseQuantity(q.value.ValueString())
		if err != nil {
			return corev1.Container{}, fmt.Errorf("%s %q: %w", q.attr, q.value.ValueString(), err)
		}
		if *q.list == nil {
			*q.list = corev1.ResourceList{}
		}
		(*q.list)[q.name] = parsed
	}
	for _, v := range m.Volumes {
		out.VolumeMounts = append(out.VolumeMounts, corev1.VolumeMount{Name: v.Name.ValueString(), MountPath: v.MountPath.ValueString(), ReadOnly: v.ReadOnly.ValueBool()})
	}
	if m.ShmSize.ValueString() != "" {
		out.VolumeMounts = append(out.VolumeMounts, corev1.VolumeMount{Name: shmVolumeName, MountPath: shmMountPath})
	}
	return out, nil
}

func (m *workloadModel) tolerations() []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range m.Tolerations {
		out = append(out, corev1.Toleration{
			Key:               t.Key.ValueString(),
			Operator:          corev1.TolerationOperator(t.Operator.ValueString()),
			Value:             t.Value.ValueString(),
			Effect:            corev1.TaintEffect(t.Effect.ValueString()),
			TolerationSeconds: t.TolerationSeconds.ValueInt64Pointer(),
		})
	}
	return out
}

// job is the Job for kind = "job". Its selector is left to Kubernetes.
func (m *workloadModel) job() (*batchv1.Job, error) {
	s := m.jobSettings()
	template, err := m.podTemplate(corev1.RestartPolicy(s.RestartPolicy.ValueString()))
	if err != nil {
		return nil, err
	}
	return &batchv1.Job{
		ObjectMeta: m.objectMeta(),
		Spec: batchv1.JobSpec{
			BackoffLimit:            int32Pointer(s.BackoffLimit),
			Completions:             int32Pointer(s.Completions),
			Parallelism:             int32Pointer(s.Parallelism),
			ActiveDeadlineSeconds:   s.ActiveDeadlineSeconds.ValueInt64Pointer(),
			TTLSecondsAfterFinished: int32Pointer(s.TTLSecondsAfterFinished),
			Template:                template,
		},
	}, nil
}

// deployment is the Deployment for kind = "deployment", selecting its pods
// by workloadLabel.
func (m *workloadModel) deployment() (*appsv1.Deployment, error) {
	s := m.deploymentSettings()
	template, err := m.podTemplate(corev1.RestartPolicyAlways)
	if err != nil {
		return nil, err
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: m.objectMeta(),
		Spec: appsv1.DeploymentSpec{
			Replicas: int32Pointer(s.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{workloadLabel: m.name()}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.DeploymentStrategyType(s.Strategy.ValueString())},
			Template: template,
		},
	}, nil
}

// gpuRequest is what one pod asks of a node, for the scheduling diagnosis.
func (m *workloadModel) gpuRequest() kube.GPURequest {
	req := kube.GPURequest{
		Resource:     gpuResourceName(m.GPU),
		Count:        m.GPU.Count.ValueInt64(),
		Products:     m.GPU.Products,
		MinMemoryMiB: m.GPU.MinMemoryGiB.ValueInt64() * 1024,
		NodeSelector: m.NodeSelector,
		Tolerations:  append(m.tolerations(), gpuToleration),
	}
	if cc, err := kube.ParseComputeCapability(m.GPU.MinComputeCapability.ValueString()); err == nil {
		req.MinCompute = &cc
	}
	return req
}

func int32Pointer(v types.Int64) *int32 {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	return ptr.To(int32(v.ValueInt64()))
}
