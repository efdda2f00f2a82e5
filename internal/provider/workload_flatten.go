package provider

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// systemAnnotationPrefixes start annotations that Kubernetes or kubectl
// write on workloads; they are not the user's and never show as drift.
var systemAnnotationPrefixes = []string{"deployment.kubernetes.io/", "batch.kubernetes.io/", "kubectl.kubernetes.io/"}

// refreshFromJob sets m's configuration attributes to what the Job says, so
// a plan shows what changed out of band. m starts as the prior state
// (after an import, only kind and metadata are set); where the cluster
// spells a value differently but means the same ("0.5" and "500m"), the
// state's spelling is kept.
func (m *workloadModel) refreshFromJob(job *batchv1.Job) {
	m.Kind = types.StringValue(workloadKindJob)
	m.refreshFromPodTemplate(job.ObjectMeta, &job.Spec.Template)
	spec := job.Spec
	s := workloadJobModel{
		BackoffLimit:            int64FromInt32(spec.BackoffLimit, defaultBackoffLimit),
		Completions:             int64FromInt32(spec.Completions, 1),
		Parallelism:             int64FromInt32(spec.Parallelism, 1),
		ActiveDeadlineSeconds:   types.Int64PointerValue(spec.ActiveDeadlineSeconds),
		TTLSecondsAfterFinished: types.Int64Null(),
		RestartPolicy:           types.StringValue(string(spec.Template.Spec.RestartPolicy)),
	}
	if spec.TTLSecondsAfterFinished != nil {
		s.TTLSecondsAfterFinished = types.Int64Value(int64(*spec.TTLSecondsAfterFinished))
	}
	if m.Job != nil || s != defaultJobSettings() {
		m.Job = &s
	}
	m.Deployment = nil
	if m.WaitForCompletion.IsNull() {
		m.WaitForCompletion = types.BoolValue(true)
	}
	if m.WaitForRollout.IsNull() {
		m.WaitForRollout = types.BoolValue(true)
	}
}

// refreshFromDeployment is refreshFromJob for a Deployment.
func (m *workloadModel) refreshFromDeployment(dep *appsv1.Deployment) {
	m.Kind = types.StringValue(workloadKindDeployment)
	m.refreshFromPodTemplate(dep.ObjectMeta, &dep.Spec.Template)
	s := workloadDeploymentModel{
		Replicas: int64FromInt32(dep.Spec.Replicas, 1),
		Strategy: types.StringValue(string(dep.Spec.Strategy.Type)),
	}
	if m.Deployment != nil || s != defaultDeploymentSettings() {
		m.Deployment = &s
	}
	m.Job = nil
	if m.WaitForCompletion.IsNull() {
		m.WaitForCompletion = types.BoolValue(true)
	}
	if m.WaitForRollout.IsNull() {
		m.WaitForRollout = types.BoolValue(true)
	}
}

func (m *workloadModel) refreshFromPodTemplate(meta metav1.ObjectMeta, tpl *corev1.PodTemplateSpec) {
	if m.Metadata == nil {
		m.Metadata = &workloadMetadataModel{}
	}
	m.ID = types.StringValue(meta.Namespace + "/" + meta.Name)
	m.Metadata.Name = types.StringValue(meta.Name)
	m.Metadata.Namespace = types.StringValue(meta.Namespace)
	labels := maps.Clone(meta.Labels)
	delete(labels, workloadLabel)
	m.Metadata.Labels = keepEmptyMap(labels, m.Metadata.Labels)
	annotations := maps.Clone(meta.Annotations)
	maps.DeleteFunc(annotations, func(k, _ string) bool {
		return slices.ContainsFunc(systemAnnotationPrefixes, func(p string) bool { return strings.HasPrefix(k, p) })
	})
	m.Metadata.Annotations = keepEmptyMap(annotations, m.Metadata.Annotations)

	spec := &tpl.Spec
	m.ServiceAccount = stringOrNull(spec.ServiceAccountName)
	m.RuntimeClassName = types.StringPointerValue(spec.RuntimeClassName)
	m.NodeSelector = keepEmptyMap(spec.NodeSelector, m.NodeSelector)
	var secrets []string
	for _, s := range spec.ImagePullSecrets {
		secrets = append(secrets, s.Name)
	}
	m.ImagePullSecrets = keepEmptySlice(secrets, m.ImagePullSecrets)
	m.refreshTolerations(spec.Tolerations)

	var container *corev1.Container
	if len(spec.Containers) > 0 {
		container = &spec.Containers[0]
	}
	if m.Container != nil {
		if i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == m.Container.Name.ValueString() }); i >= 0 {
			container = &spec.Containers[i]
		}
	}
	if container == nil {
		return
	}
	m.refreshContainer(container)
	m.refreshGPU(container, spec.Affinity)
	m.refreshVolumes(spec.Volumes, container.VolumeMounts)
}

func (m *workloadModel) refreshContainer(c *corev1.Container) {
	if m.Container == nil {
		m.Container = &workloadContainerModel{}
	}
	mc := m.Container
	mc.Name = types.StringValue(c.Name)
	mc.Image = types.StringValue(c.Image)
	mc.Command = keepEmptySlice(c.Command, mc.Command)
	mc.Args = keepEmptySlice(c.Args, mc.Args)
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	mc.Env = keepEmptyMap(env, mc.Env)
	mc.WorkingDir = stringOrNull(c.WorkingDir)
	mc.CPURequest = refreshQuantity(c.Resources.Requests, corev1.ResourceCPU, mc.CPURequest)
	mc.MemoryRequest = refreshQuantity(c.Resources.Requests, corev1.ResourceMemory, mc.MemoryRequest)
	mc.CPULimit = refreshQuantity(c.Resources.Limits, corev1.ResourceCPU, mc.CPULimit)
	mc.MemoryLimit = refreshQuantity(c.Resources.Limits, corev1.ResourceMemory, mc.MemoryLimit)
}

// refreshGPU reads the gpu block back from the container's limits and the
// node affinity gpuNodeAffinity wrote.
func (m *workloadModel) refreshGPU(c *corev1.Container, affinity *corev1.Affinity) {
	if m.GPU == nil {
		m.GPU = &workloadGPUModel{}
	}
	g := m.GPU
	g.Shared, g.MIGProfile = types.BoolValue(false), types.StringNull()
	for name, q := range c.Resources.Limits {
		switch {
		case name == corev1.ResourceName(gpulabels.ResourceName):
		case name == gpulabels.SharedResourceName:
			g.Shared = types.BoolValue(true)
		case strings.HasPrefix(string(name), gpulabels.MIGResourcePrefix):
			g.MIGProfile = types.StringValue(strings.TrimPrefix(string(name), gpulabels.MIGResourcePrefix))
		default:
			continue
		}
		g.Count = types.Int64Value(q.Value())
	}

	var products []string
	g.MinMemoryGiB, g.MinComputeCapability = types.Int64Null(), types.StringNull()
	var terms []corev1.NodeSelectorTerm
	if affinity != nil && affinity.NodeAffinity != nil && affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms = affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	// One term: major > M-1 (capability M.0). Two: major > M, or major in
	// [M] and minor > m-1 (capability M.m).
	major, minor := -1, 0
	for i, term := range terms {
		for _, r := range term.MatchExpressions {
			v, ok := singleInt(r.Values)
			switch {
			case i == 0 && r.Key == gpulabels.Product && r.Operator == corev1.NodeSelectorOpIn:
				products = slices.DeleteFunc(slices.Clone(r.Values), func(p string) bool {
					return g.Shared.ValueBool() && strings.HasSuffix(p, gpulabels.SharedProductSuffix)
				})
			case !ok:
			case i == 0 && r.Key == gpulabels.Memory && r.Operator == corev1.NodeSelectorOpGt:
				g.MinMemoryGiB = types.Int64Value((v + 1 + 1023) / 1024)
			case i == 0 && len(terms) == 1 && r.Key == gpulabels.ComputeMajor && r.Operator == corev1.NodeSelectorOpGt:
				major = int(v) + 1
			case i == 1 && r.Key == gpulabels.ComputeMajor && r.Operator == corev1.NodeSelectorOpIn:
				major = int(v)
			case i == 1 && r.Key == gpulabels.ComputeMinor && r.Operator == corev1.NodeSelectorOpGt:
				minor = int(v) + 1
			}
		}
	}
	if major >= 0 {
		g.MinComputeCapability = types.StringValue(strconv.Itoa(major) + "." + strconv.Itoa(minor))
	}
	g.Products = keepEmptySlice(products, g.Products)
}

func (m *workloadModel) refreshVolumes(volumes []corev1.Volume, mounts []corev1.VolumeMount) {
	out := []workloadVolumeModel{}
	m.ShmSize = refreshShmSize(volumes, m.ShmSize)
	for _, v := range volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		mv := workloadVolumeModel{
			Name:      types.StringValue(v.Name),
			ClaimName: types.StringValue(v.PersistentVolumeClaim.ClaimName),
			MountPath: types.StringNull(),
			ReadOnly:  types.BoolValue(v.PersistentVolumeClaim.ReadOnly),
		}
		if i := slices.IndexFunc(mounts, func(vm corev1.VolumeMount) bool { return vm.Name == v.Name }); i >= 0 {
			mv.MountPath = types.StringValue(mounts[i].MountPath)
			mv.ReadOnly = types.BoolValue(mounts[i].ReadOnly || v.PersistentVolumeClaim.ReadOnly)
		}
		out = append(out, mv)
	}
	m.Volumes = out
}

func refreshShmSize(volumes []corev1.Volume, prior types.String) types.String {
	for _, v := range volumes {
		if v.Name == shmVolumeName && v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
			return keepQuantitySpelling(*v.EmptyDir.SizeLimit, prior)
		}
	}
	return types.StringNull()
}

// refreshTolerations keeps the user's tolerations: all but the GPU
// toleration podTemplate appended last.
func (m *workloadModel) refreshTolerations(tolerations []corev1.Toleration) {
	tolerations = slices.Clone(tolerations)
	for i := len(tolerations) - 1; i >= 0; i-- {
		if tolerations[i] == gpuToleration {
			tolerations = slices.Delete(tolerations, i, i+1)
			break
		}
	}
	var out []tolerationModel
	for _, t := range tolerations {
		out = append(out, tolerationModel{
			Key:               stringOrNull(t.Key),
			Operator:          stringOrNull(string(t.Operator)),
			Value:             stringOrNull(t.Value),
			Effect:            stringOrNull(string(t.Effect)),
			TolerationSeconds: types.Int64PointerValue(t.TolerationSeconds),
		})
	}
	m.Tolerations = keepEmptySlice(out, m.Tolerations)
}

func refreshQuantity(list corev1.ResourceList, name corev1.ResourceName, prior types.String) types.String {
	q, ok := list[name]
	if !ok {
		return types.StringNull()
	}
	return keepQuantitySpelling(q, prior)
}

// keepQuantitySpelling returns prior when it is the same amount as q, else q
// as the API server writes it.
func keepQuantitySpelling(q resource.Quantity, prior types.String) types.String {
	if p, err := resource.ParseQuantity(prior.ValueString()); err == nil && p.Cmp(q) == 0 {
		return prior
	}
	return types.StringValue(q.String())
}

func stringOrNull(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

func int64FromInt32(v *int32, dflt int64) types.Int64 {
	if v == nil {
		return types.Int64Value(dflt)
	}
	return types.Int64Value(int64(*v))
}

func singleInt(values []string) (int64, bool) {
	if len(values) != 1 {
		return 0, false
	}
	v, err := strconv.ParseInt(values[0], 10, 64)
	return v, err == nil
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
