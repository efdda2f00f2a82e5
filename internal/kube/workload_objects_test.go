package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// testJobSpec is a minimal job asking for count GPUs.
func testJobSpec(count int64) WorkloadSpec {
	return WorkloadSpec{
		Kind:      WorkloadJob,
		Namespace: "default",
		Name:      "train",
		Pod: WorkloadPod{
			Container: WorkloadContainer{Name: "main", Image: "nvcr.io/nvidia/pytorch:24.05-py3"},
			GPU:       WorkloadGPU{Count: count},
		},
		Job: JobSettings{RestartPolicy: corev1.RestartPolicyNever},
	}
}

func nodeSelectorTerms(t *testing.T, a *corev1.Affinity) []corev1.NodeSelectorTerm {
	t.Helper()
	require.NotNil(t, a)
	return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
}

func requirement(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func TestGPUNodeAffinity(t *testing.T) {
	const (
		product = "nvidia.com/gpu.product"
		memory  = "nvidia.com/gpu.memory"
		major   = "nvidia.com/gpu.compute.major"
		minor   = "nvidia.com/gpu.compute.minor"
	)
	tests := []struct {
		description string
		gpu         WorkloadGPU
		want        []corev1.NodeSelectorTerm // nil: no affinity at all
	}{
		{
			description: "A count alone needs no affinity: the resource limit finds GPU nodes.",
			gpu:         WorkloadGPU{Count: 1},
		},
		{
			description: "Products become one In requirement.",
			gpu:         WorkloadGPU{Count: 2, Products: []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"}},
			want: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				requirement(product, corev1.NodeSelectorOpIn, "NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"),
			}}},
		},
		{
			description: "Shared products also accept GFD's -SHARED spelling.",
			gpu:         WorkloadGPU{Count: 1, Shared: true, Products: []string{"Tesla-T4"}},
			want: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				requirement(product, corev1.NodeSelectorOpIn, "Tesla-T4", "Tesla-T4-SHARED"),
			}}},
		},
		{
			description: "40 GiB becomes memory greater than 40959 MiB, so a 40960 MiB A100 matches.",
			gpu:         WorkloadGPU{Count: 1, MinMemoryGiB: 40},
			want: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				requirement(memory, corev1.NodeSelectorOpGt, "40959"),
			}}},
		},
		{
			description: "Compute capability 8.0 is one term: major greater than 7.",
			gpu:         WorkloadGPU{Count: 1, MinCompute: &ComputeCapability{Major: 8}},
			want: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				requirement(major, corev1.NodeSelectorOpGt, "7"),
			}}},
		},
		{
			description: "Compute capability 8.6 is two ORed terms, each repeating the other criteria: major > 8, or major 8 and minor > 5.",
			gpu: WorkloadGPU{Count: 1, Products: []string{"NVIDIA-A10G", "NVIDIA-H100-80GB-HBM3"},
				MinMemoryGiB: 20, MinCompute: &ComputeCapability{Major: 8, Minor: 6}},
			want: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{
					requirement(product, corev1.NodeSelectorOpIn, "NVIDIA-A10G", "NVIDIA-H100-80GB-HBM3"),
					requirement(memory, corev1.NodeSelectorOpGt, "20479"),
					requirement(major, corev1.NodeSelectorOpGt, "8"),
				}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{
					requirement(product, corev1.NodeSelectorOpIn, "NVIDIA-A10G", "NVIDIA-H100-80GB-HBM3"),
					requirement(memory, corev1.NodeSelectorOpGt, "20479"),
					requirement(major, corev1.NodeSelectorOpIn, "8"),
					requirement(minor, corev1.NodeSelectorOpGt, "5"),
				}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			affinity := tt.gpu.nodeAffinity()
			if tt.want == nil {
				require.Nil(t, affinity)
				return
			}
			require.Equal(t, tt.want, nodeSelectorTerms(t, affinity))
		})
	}
}

func TestGPUResourceName(t *testing.T) {
	tests := []struct {
		description string
		gpu         WorkloadGPU
		want        corev1.ResourceName
	}{
		{"Whole GPUs are nvidia.com/gpu.", WorkloadGPU{}, "nvidia.com/gpu"},
		{"A share of a time-sliced GPU is nvidia.com/gpu.shared.", WorkloadGPU{Shared: true}, "nvidia.com/gpu.shared"},
		{"A MIG profile is nvidia.com/mig-<profile>.", WorkloadGPU{MIGProfile: "1g.10gb"}, "nvidia.com/mig-1g.10gb"},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			require.Equal(t, tt.want, tt.gpu.GPUResource())
		})
	}
}

func TestWorkloadPodTemplate(t *testing.T) {
	s := testJobSpec(2)
	s.Pod.GPU.MIGProfile = "3g.40gb"
	s.Pod.Container.CPURequest = ptr.To(resource.MustParse("4"))
	s.Pod.Container.MemoryLimit = ptr.To(resource.MustParse("64Gi"))
	s.Pod.Container.Env = map[string]string{"B": "2", "A": "1"}
	s.Pod.ShmSize = ptr.To(resource.MustParse("16Gi"))
	s.Pod.Volumes = []ClaimVolume{{Name: "data", ClaimName: "imagenet", MountPath: "/data", ReadOnly: true}}
	s.Pod.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml", Effect: corev1.TaintEffectNoSchedule}}
	s.Job.BackoffLimit = ptr.To(int32(6))

	job := BuildJob(s)
	spec := job.Spec.Template.Spec
	require.Equal(t, corev1.RestartPolicyNever, spec.RestartPolicy)
	require.Equal(t, "train", job.Labels[WorkloadLabel])
	require.Equal(t, "train", job.Spec.Template.Labels[WorkloadLabel])
	require.Equal(t, int32(6), *job.Spec.BackoffLimit)

	c := spec.Containers[0]
	requireQuantity(t, "2", c.Resources.Limits["nvidia.com/mig-3g.40gb"])
	require.NotContains(t, c.Resources.Limits, corev1.ResourceName("nvidia.com/gpu"))
	requireQuantity(t, "4", c.Resources.Requests[corev1.ResourceCPU])
	requireQuantity(t, "64Gi", c.Resources.Limits[corev1.ResourceMemory])
	require.Equal(t, []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}, c.Env, "env is sorted, so the same map gives the same pod")

	require.Equal(t, []corev1.Toleration{
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml", Effect: corev1.TaintEffectNoSchedule},
		{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}, spec.Tolerations)

	require.Len(t, spec.Volumes, 2)
	require.Equal(t, "imagenet", spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	require.True(t, spec.Volumes[0].PersistentVolumeClaim.ReadOnly)
	shm := spec.Volumes[1]
	require.Equal(t, corev1.StorageMediumMemory, shm.EmptyDir.Medium)
	requireQuantity(t, "16Gi", *shm.EmptyDir.SizeLimit)
	require.Equal(t, []corev1.VolumeMount{
		{Name: "data", MountPath: "/data", ReadOnly: true},
		{Name: "dshm", MountPath: "/dev/shm"},
	}, c.VolumeMounts)
}

func requireQuantity(t *testing.T, want string, got resource.Quantity) {
	t.Helper()
	wantQ := resource.MustParse(want)
	require.Zero(t, wantQ.Cmp(got), "want %s, got %s", want, got.String())
}

func TestWorkloadDeploymentSelectsItsPods(t *testing.T) {
	s := testJobSpec(1)
	s.Kind = WorkloadDeployment
	s.Deployment = DeploymentSettings{Replicas: ptr.To(int32(1)), Strategy: appsv1.RollingUpdateDeploymentStrategyType}
	s.Labels = map[string]string{"team": "ml"}
	dep := BuildDeployment(s)
	require.Equal(t, map[string]string{WorkloadLabel: "train"}, dep.Spec.Selector.MatchLabels)
	require.Equal(t, map[string]string{WorkloadLabel: "train", "team": "ml"}, dep.Spec.Template.Labels)
	require.Equal(t, corev1.RestartPolicyAlways, dep.Spec.Template.Spec.RestartPolicy)
	require.Equal(t, int32(1), *dep.Spec.Replicas)
	require.NotContains(t, s.Labels, WorkloadLabel, "building must not write into the spec's labels")
}
