package kube

import (
	"maps"
	"slices"
	"strconv"
	"strings"

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

// JobWorkloadSpec reads a Job back into the spec that would build it, so a
// plan shows what changed out of band. container names the container to
// read when the pod has several; the first is read when none has that name.
func JobWorkloadSpec(job *batchv1.Job, container string) WorkloadSpec {
	s := workloadSpecFrom(WorkloadJob, job.ObjectMeta, &job.Spec.Template, container)
	spec := job.Spec
	s.Job = JobSettings{
		BackoffLimit:            spec.BackoffLimit,
		Completions:             spec.Completions,
		Parallelism:             spec.Parallelism,
		ActiveDeadlineSeconds:   spec.ActiveDeadlineSeconds,
		TTLSecondsAfterFinished: spec.TTLSecondsAfterFinished,
		RestartPolicy:           spec.Template.Spec.RestartPolicy,
		Suspend:                 spec.Suspend != nil && *spec.Suspend,
	}
	return s
}

// DeploymentWorkloadSpec is JobWorkloadSpec for a Deployment.
func DeploymentWorkloadSpec(dep *appsv1.Deployment, container string) WorkloadSpec {
	s := workloadSpecFrom(WorkloadDeployment, dep.ObjectMeta, &dep.Spec.Template, container)
	s.Deployment = DeploymentSettings{Replicas: dep.Spec.Replicas, Strategy: dep.Spec.Strategy.Type}
	return s
}

func workloadSpecFrom(kind WorkloadKind, meta metav1.ObjectMeta, tpl *corev1.PodTemplateSpec, containerName string) WorkloadSpec {
	s := WorkloadSpec{Kind: kind, Namespace: meta.Namespace, Name: meta.Name}
	s.Labels = maps.Clone(meta.Labels)
	delete(s.Labels, WorkloadLabel)
	if len(s.Labels) == 0 {
		s.Labels = nil
	}
	s.Owner = meta.Annotations[AnnotationOwner]
	s.Annotations = maps.Clone(meta.Annotations)
	delete(s.Annotations, AnnotationOwner)
	maps.DeleteFunc(s.Annotations, func(k, _ string) bool {
		return slices.ContainsFunc(systemAnnotationPrefixes, func(p string) bool { return strings.HasPrefix(k, p) })
	})
	if len(s.Annotations) == 0 {
		s.Annotations = nil
	}

	spec := &tpl.Spec
	p := &s.Pod
	p.ServiceAccount = spec.ServiceAccountName
	p.RuntimeClassName = spec.RuntimeClassName
	p.NodeSelector = maps.Clone(spec.NodeSelector)
	for _, secret := range spec.ImagePullSecrets {
		p.ImagePullSecrets = append(p.ImagePullSecrets, secret.Name)
	}
	p.Tolerations = userTolerations(spec.Tolerations)
	p.ShmSize = shmSize(spec.Volumes)

	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == containerName })
	if i < 0 {
		i = 0
	}
	if i >= len(spec.Containers) {
		return s
	}
	c := &spec.Containers[i]
	p.Container = containerSpecFrom(c)
	p.GPU = gpuSpecFrom(c, spec.Affinity)
	if claimTemplateOf(spec) != "" && slices.ContainsFunc(c.Resources.Claims, func(rc corev1.ResourceClaim) bool { return rc.Name == DRAClaimName }) {
		// The criteria are in the claim template: ReadWorkload fills them.
		p.GPU = WorkloadGPU{Allocation: AllocateDRA}
	}
	p.Volumes = claimVolumesFrom(spec.Volumes, c.VolumeMounts)
	return s
}

// userTolerations are all but the GPU toleration the build appended last.
func userTolerations(tolerations []corev1.Toleration) []corev1.Toleration {
	tolerations = slices.Clone(tolerations)
	for i := len(tolerations) - 1; i >= 0; i-- {
		if tolerations[i] == GPUToleration {
			tolerations = slices.Delete(tolerations, i, i+1)
			break
		}
	}
	if len(tolerations) == 0 {
		return nil
	}
	return tolerations
}

func shmSize(volumes []corev1.Volume) *resource.Quantity {
	for _, v := range volumes {
		if v.Name == ShmVolumeName && v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
			size := v.EmptyDir.SizeLimit.DeepCopy()
			return &size
		}
	}
	return nil
}

func containerSpecFrom(c *corev1.Container) WorkloadContainer {
	out := WorkloadContainer{
		Name:       c.Name,
		Image:      c.Image,
		Command:    slices.Clone(c.Command),
		Args:       slices.Clone(c.Args),
		WorkingDir: c.WorkingDir,
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			continue
		}
		if out.Env == nil {
			out.Env = map[string]string{}
		}
		out.Env[e.Name] = e.Value
	}
	quantity := func(list corev1.ResourceList, name corev1.ResourceName) *resource.Quantity {
		q, ok := list[name]
		if !ok {
			return nil
		}
		return &q
	}
	out.CPURequest = quantity(c.Resources.Requests, corev1.ResourceCPU)
	out.MemoryRequest = quantity(c.Resources.Requests, corev1.ResourceMemory)
	out.CPULimit = quantity(c.Resources.Limits, corev1.ResourceCPU)
	out.MemoryLimit = quantity(c.Resources.Limits, corev1.ResourceMemory)
	return out
}

// gpuSpecFrom reads the GPU criteria back from the container's limits and
// the node affinity nodeAffinity wrote.
func gpuSpecFrom(c *corev1.Container, affinity *corev1.Affinity) WorkloadGPU {
	var g WorkloadGPU
	for name, q := range c.Resources.Limits {
		switch {
		case name == ResourceGPU:
		case name == gpulabels.SharedResourceName:
			g.Shared = true
		case strings.HasPrefix(string(name), gpulabels.MIGResourcePrefix):
			g.MIGProfile = strings.TrimPrefix(string(name), gpulabels.MIGResourcePrefix)
		default:
			continue
		}
		g.Count = q.Value()
	}

	var terms []corev1.NodeSelectorTerm
	if affinity != nil && affinity.NodeAffinity != nil && affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms = affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	for _, term := range terms {
		for _, r := range term.MatchExpressions {
			v, ok := singleInt(r.Values)
			switch {
			case r.Key == gpulabels.Product && r.Operator == corev1.NodeSelectorOpIn:
				g.Products = slices.DeleteFunc(slices.Clone(r.Values), func(p string) bool {
					return g.Shared && strings.HasSuffix(p, gpulabels.SharedProductSuffix)
				})
			case ok && r.Key == gpulabels.Memory && r.Operator == corev1.NodeSelectorOpGt:
				g.MinMemoryGiB = (v + 1 + 1023) / 1024
			}
		}
	}
	if major, minor, ok := leastVersionFrom(terms, gpulabels.ComputeMajor, gpulabels.ComputeMinor); ok {
		g.MinCompute = &ComputeCapability{Major: major, Minor: minor}
	}
	if major, minor, ok := leastVersionFrom(terms, gpulabels.RuntimeVersionMajor, gpulabels.RuntimeVersionMinor); ok {
		g.MinCUDA = &CUDAVersion{Major: major, Minor: minor}
	}
	return g
}

// leastVersionFrom reads back the least version atLeastTerms wrote on the
// labels majorKey and minorKey: a term with major In [M] and minor > m-1
// is M.m; otherwise major > M-1 is M.0.
func leastVersionFrom(terms []corev1.NodeSelectorTerm, majorKey, minorKey string) (major, minor int, ok bool) {
	gtMajor := -1
	for _, term := range terms {
		inMajor, gtMinor := -1, -1
		for _, r := range term.MatchExpressions {
			v, isInt := singleInt(r.Values)
			switch {
			case !isInt:
			case r.Key == majorKey && r.Operator == corev1.NodeSelectorOpIn:
				inMajor = int(v)
			case r.Key == minorKey && r.Operator == corev1.NodeSelectorOpGt:
				gtMinor = int(v)
			case r.Key == majorKey && r.Operator == corev1.NodeSelectorOpGt && gtMajor < 0:
				gtMajor = int(v)
			}
		}
		if inMajor >= 0 && gtMinor >= 0 {
			return inMajor, gtMinor + 1, true
		}
	}
	if gtMajor >= 0 {
		return gtMajor + 1, 0, true
	}
	return 0, 0, false
}

func claimVolumesFrom(volumes []corev1.Volume, mounts []corev1.VolumeMount) []ClaimVolume {
	var out []ClaimVolume
	for _, v := range volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		cv := ClaimVolume{Name: v.Name, ClaimName: v.PersistentVolumeClaim.ClaimName, ReadOnly: v.PersistentVolumeClaim.ReadOnly}
		if i := slices.IndexFunc(mounts, func(vm corev1.VolumeMount) bool { return vm.Name == v.Name }); i >= 0 {
			cv.MountPath = mounts[i].MountPath
			cv.ReadOnly = mounts[i].ReadOnly || v.PersistentVolumeClaim.ReadOnly
		}
		out = append(out, cv)
	}
	return out
}

func singleInt(values []string) (int64, bool) {
	if len(values) != 1 {
		return 0, false
	}
	v, err := strconv.ParseInt(values[0], 10, 64)
	return v, err == nil
}
