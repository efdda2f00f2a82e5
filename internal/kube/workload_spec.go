package kube

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// WorkloadKind is what a WorkloadSpec runs.
type WorkloadKind string

// The kinds of workload, spelled as gpu_workload's `kind`.
const (
	WorkloadJob        WorkloadKind = "job"
	WorkloadDeployment WorkloadKind = "deployment"
)

// WorkloadLabel is on every workload and pod a WorkloadSpec makes, with the
// workload's name as value; it is a Deployment's selector.
const WorkloadLabel = "terraform-provider-gpu/workload"

// The memory-backed emptyDir that WorkloadPod.ShmSize adds.
const (
	ShmVolumeName = "dshm"
	ShmMountPath  = "/dev/shm"
)

// WorkloadSpec is everything gpu_workload runs, before any Kubernetes object
// is built from it: a Job or a Deployment of pods that ask for GPUs. The
// provider builds one from a plan; ReadWorkload builds one from the cluster.
type WorkloadSpec struct {
	Kind      WorkloadKind
	Namespace string
	Name      string
	// Labels and Annotations are the user's, on the workload and on its
	// pods; WorkloadLabel is added when the objects are built.
	Labels      map[string]string
	Annotations map[string]string
	Pod         WorkloadPod
	Job         JobSettings        // Kind WorkloadJob only
	Deployment  DeploymentSettings // Kind WorkloadDeployment only
	// Owner is written into AnnotationOwner on the workload (not its
	// pods); see Ownership. Read back from the cluster, it is the
	// object's marker, "" when it has none.
	Owner string
}

// WorkloadPod is the pod every replica or completion runs.
type WorkloadPod struct {
	Container        WorkloadContainer
	GPU              WorkloadGPU
	ServiceAccount   string
	ImagePullSecrets []string
	RuntimeClassName *string
	NodeSelector     map[string]string
	// Tolerations are the user's; the GPU toleration (GPUToleration) is
	// added when the objects are built.
	Tolerations []corev1.Toleration
	Volumes     []ClaimVolume
	// ShmSize, when set, mounts a memory-backed emptyDir of that size at
	// /dev/shm.
	ShmSize *resource.Quantity
}

// WorkloadContainer is the one container that does the work.
type WorkloadContainer struct {
	Name       string
	Image      string
	Command    []string
	Args       []string
	Env        map[string]string
	WorkingDir string
	// Each quantity is nil when unset.
	CPURequest, MemoryRequest, CPULimit, MemoryLimit *resource.Quantity
}

// WorkloadGPU is what GPUs each pod needs.
type WorkloadGPU struct {
	Count        int64
	Products     []string // GFD's nvidia.com/gpu.product values; any when empty
	MinMemoryGiB int64    // 0: any
	MinCompute   *ComputeCapability
	Shared       bool   // a share of a time-sliced GPU: nvidia.com/gpu.shared
	MIGProfile   string // MIG instances of this profile instead of whole GPUs
	// MinCUDA is the least CUDA version the node's driver must support;
	// nil: any.
	MinCUDA *CUDAVersion
	// Allocation is how the GPUs are asked for; "" is AllocateDevicePlugin.
	Allocation GPUAllocation
	// Alternatives are later choices, tried in order when the criteria
	// above cannot be met (DRA only: firstAvailable).
	Alternatives []GPUChoice
}

// ClaimVolume is a PersistentVolumeClaim mounted into the container.
type ClaimVolume struct {
	Name      string
	ClaimName string
	MountPath string
	ReadOnly  bool
}

// JobSettings are a Job's own settings. Nil pointers leave a setting to
// Kubernetes' default (6 retries, 1 completion, parallelism 1, no deadline,
// never deleted).
type JobSettings struct {
	BackoffLimit            *int32
	Completions             *int32
	Parallelism             *int32
	ActiveDeadlineSeconds   *int64
	TTLSecondsAfterFinished *int32
	RestartPolicy           corev1.RestartPolicy
	// Suspend creates the Job without starting pods; setting it later
	// stops the running ones. A suspended Job is not waited for.
	Suspend bool
}

// DeploymentSettings are a Deployment's own settings.
type DeploymentSettings struct {
	Replicas *int32
	Strategy appsv1.DeploymentStrategyType
}

// ID is namespace/name, the resource's Terraform ID.
func (s WorkloadSpec) ID() string { return s.Namespace + "/" + s.Name }

// GPUToleration lets the pods onto nodes tainted as GPU nodes; every
// workload's pods carry it after the user's tolerations.
var GPUToleration = corev1.Toleration{Key: gpulabels.TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// GPUResource is what the spec's pods ask for: whole GPUs, a share of a
// time-sliced GPU, or MIG instances of one profile.
func (g WorkloadGPU) GPUResource() corev1.ResourceName {
	switch {
	case g.MIGProfile != "":
		return corev1.ResourceName(gpulabels.MIGResourcePrefix + g.MIGProfile)
	case g.Shared:
		return gpulabels.SharedResourceName
	}
	return ResourceGPU
}

// GPURequest is what one pod asks of a node, for the scheduling diagnosis.
func (s WorkloadSpec) GPURequest() GPURequest {
	p := s.Pod
	return GPURequest{
		Resource:     p.GPU.GPUResource(),
		Count:        p.GPU.Count,
		Products:     p.GPU.Products,
		MinMemoryMiB: p.GPU.MinMemoryGiB * 1024,
		MinCompute:   p.GPU.MinCompute,
		MinCUDA:      p.GPU.MinCUDA,
		NodeSelector: p.NodeSelector,
		Tolerations:  append(append([]corev1.Toleration(nil), p.Tolerations...), GPUToleration),
	}
}

// Ref names the spec's workload on the cluster.
func (s WorkloadSpec) Ref() WorkloadRef {
	return WorkloadRef{Kind: s.Kind, Namespace: s.Namespace, Name: s.Name, Container: s.Pod.Container.Name, DRA: s.Pod.GPU.DRA()}
}
