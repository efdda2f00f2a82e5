package kube

import (
	"maps"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// BuildJob is the Job of a job spec. Its selector is left to Kubernetes.
func BuildJob(s WorkloadSpec) *batchv1.Job {
	j := s.Job
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: s.objectMeta(),
		Spec: batchv1.JobSpec{
			BackoffLimit:            j.BackoffLimit,
			Completions:             j.Completions,
			Parallelism:             j.Parallelism,
			ActiveDeadlineSeconds:   j.ActiveDeadlineSeconds,
			TTLSecondsAfterFinished: j.TTLSecondsAfterFinished,
			Suspend:                 suspendField(j.Suspend),
			Template:                s.podTemplate(j.RestartPolicy),
		},
	}
}

// BuildDeployment is the Deployment of a deployment spec, selecting its
// pods by WorkloadLabel.
func BuildDeployment(s WorkloadSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: s.objectMeta(),
		Spec: appsv1.DeploymentSpec{
			Replicas: s.Deployment.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{WorkloadLabel: s.Name}},
			Strategy: appsv1.DeploymentStrategy{Type: s.Deployment.Strategy},
			Template: s.podTemplate(corev1.RestartPolicyAlways),
		},
	}
}

// suspendField is how a Job says it is suspended: only when it is, so that
// an unsuspended Job reads back the same as one built before suspend existed.
func suspendField(suspend bool) *bool {
	if !suspend {
		return nil
	}
	return ptr.To(true)
}

// workloadLabels are the user's labels plus WorkloadLabel.
func (s WorkloadSpec) workloadLabels() map[string]string {
	labels := maps.Clone(s.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[WorkloadLabel] = s.Name
	return labels
}

func (s WorkloadSpec) objectMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        s.Name,
		Namespace:   s.Namespace,
		Labels:      s.workloadLabels(),
		Annotations: withOwner(maps.Clone(s.Annotations), s.Owner),
	}
}

// podTemplate is the pod every replica or completion runs.
func (s WorkloadSpec) podTemplate(restartPolicy corev1.RestartPolicy) corev1.PodTemplateSpec {
	p := s.Pod
	spec := corev1.PodSpec{
		RestartPolicy:      restartPolicy,
		ServiceAccountName: p.ServiceAccount,
		RuntimeClassName:   p.RuntimeClassName,
		NodeSelector:       maps.Clone(p.NodeSelector),
		Affinity:           p.GPU.nodeAffinity(),
		Tolerations:        append(slices.Clone(p.Tolerations), GPUToleration),
		Containers:         []corev1.Container{p.container()},
	}
	if p.GPU.DRA() {
		spec.ResourceClaims = []corev1.PodResourceClaim{{Name: DRAClaimName, ResourceClaimTemplateName: ptr.To(s.ClaimTemplateName())}}
	}
	for _, name := range p.ImagePullSecrets {
		spec.ImagePullSecrets = append(spec.ImagePullSecrets, corev1.LocalObjectReference{Name: name})
	}
	for _, v := range p.Volumes {
		spec.Volumes = append(spec.Volumes, corev1.Volume{
			Name: v.Name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: v.ClaimName,
				ReadOnly:  v.ReadOnly,
			}},
		})
	}
	if p.ShmSize != nil {
		size := p.ShmSize.DeepCopy()
		spec.Volumes = append(spec.Volumes, corev1.Volume{
			Name:         ShmVolumeName,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size}},
		})
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: s.workloadLabels(), Annotations: maps.Clone(s.Annotations)},
		Spec:       spec,
	}
}

func (p WorkloadPod) container() corev1.Container {
	c := p.Container
	out := corev1.Container{
		Name:       c.Name,
		Image:      c.Image,
		Command:    slices.Clone(c.Command),
		Args:       slices.Clone(c.Args),
		WorkingDir: c.WorkingDir,
	}
	if p.GPU.DRA() {
		out.Resources.Claims = []corev1.ResourceClaim{{Name: DRAClaimName}}
	} else {
		out.Resources.Limits = corev1.ResourceList{p.GPU.GPUResource(): *resource.NewQuantity(p.GPU.Count, resource.DecimalSI)}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Env)) {
		out.Env = append(out.Env, corev1.EnvVar{Name: name, Value: c.Env[name]})
	}
	for _, q := range []struct {
		value *resource.Quantity
		list  *corev1.ResourceList
		name  corev1.ResourceName
	}{
		{c.CPURequest, &out.Resources.Requests, corev1.ResourceCPU},
		{c.MemoryRequest, &out.Resources.Requests, corev1.ResourceMemory},
		{c.CPULimit, &out.Resources.Limits, corev1.ResourceCPU},
		{c.MemoryLimit, &out.Resources.Limits, corev1.ResourceMemory},
	} {
		if q.value == nil {
			continue
		}
		if *q.list == nil {
			*q.list = corev1.ResourceList{}
		}
		(*q.list)[q.name] = q.value.DeepCopy()
	}
	for _, v := range p.Volumes {
		out.VolumeMounts = append(out.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: v.MountPath, ReadOnly: v.ReadOnly})
	}
	if p.ShmSize != nil {
		out.VolumeMounts = append(out.VolumeMounts, corev1.VolumeMount{Name: ShmVolumeName, MountPath: ShmMountPath})
	}
	return out
}

// nodeAffinity turns the GPU criteria into required node affinity on GFD
// labels, or nil when only a count is asked for (or the GPUs come through
// DRA, whose claim selects the devices). Node selector terms are ORed and
// the expressions in a term ANDed, so a least version M.m with m > 0
// (compute capability, CUDA) becomes two terms, (major > M) OR (major = M
// AND minor > m-1), each carrying the other criteria.
func (g WorkloadGPU) nodeAffinity() *corev1.Affinity {
	if g.DRA() {
		return nil
	}
	var common []corev1.NodeSelectorRequirement
	if len(g.Products) > 0 {
		values := slices.Clone(g.Products)
		if g.Shared {
			for _, p := range g.Products {
				values = append(values, p+gpulabels.SharedProductSuffix)
			}
		}
		common = append(common, corev1.NodeSelectorRequirement{Key: gpulabels.Product, Operator: corev1.NodeSelectorOpIn, Values: values})
	}
	if g.MinMemoryGiB > 0 {
		common = append(common, gtRequirement(gpulabels.Memory, g.MinMemoryGiB*1024-1))
	}
	terms := [][]corev1.NodeSelectorRequirement{common}
	if cc := g.MinCompute; cc != nil {
		terms = andTerms(terms, atLeastTerms(gpulabels.ComputeMajor, gpulabels.ComputeMinor, cc.Major, cc.Minor))
	}
	if v := g.MinCUDA; v != nil {
		terms = andTerms(terms, atLeastTerms(gpulabels.RuntimeVersionMajor, gpulabels.RuntimeVersionMinor, v.Major, v.Minor))
	}
	if len(terms[0]) == 0 {
		return nil
	}
	selector := &corev1.NodeSelector{}
	for _, t := range terms {
		selector.NodeSelectorTerms = append(selector.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: t})
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: selector}}
}

// atLeastTerms are the ORed terms that hold when the version in the labels
// majorKey and minorKey is major.minor or newer.
func atLeastTerms(majorKey, minorKey string, major, minor int) [][]corev1.NodeSelectorRequirement {
	if minor == 0 {
		return [][]corev1.NodeSelectorRequirement{{gtRequirement(majorKey, int64(major-1))}}
	}
	return [][]corev1.NodeSelectorRequirement{
		{gtRequirement(majorKey, int64(major))},
		{{Key: majorKey, Operator: corev1.NodeSelectorOpIn, Values: []string{strconv.Itoa(major)}}, gtRequirement(minorKey, int64(minor-1))},
	}
}

// andTerms is (a1 OR a2 ...) AND (b1 OR b2 ...) as ORed terms.
func andTerms(a, b [][]corev1.NodeSelectorRequirement) [][]corev1.NodeSelectorRequirement {
	var out [][]corev1.NodeSelectorRequirement
	for _, x := range a {
		for _, y := range b {
			out = append(out, withRequirements(x, y...))
		}
	}
	return out
}

func gtRequirement(key string, value int64) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpGt, Values: []string{strconv.FormatInt(value, 10)}}
}

func withRequirements(common []corev1.NodeSelectorRequirement, more ...corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement {
	return append(slices.Clone(common), more...)
}
