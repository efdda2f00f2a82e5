package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
)

func TestWorkloadSchemaIsValid(t *testing.T) {
	resp := &resource.SchemaResponse{}
	NewWorkloadResource().Schema(context.Background(), resource.SchemaRequest{}, resp)
	require.False(t, resp.Diagnostics.HasError(), "%v", resp.Diagnostics)
	require.False(t, resp.Schema.ValidateImplementation(context.Background()).HasError())
}

// testWorkload is a minimal job asking for count GPUs.
func testWorkload(count int64) *workloadModel {
	return &workloadModel{
		Kind: types.StringValue(workloadKindJob),
		Metadata: &workloadMetadataModel{
			Name:      types.StringValue("train"),
			Namespace: types.StringValue("default"),
		},
		Container: &workloadContainerModel{
			Name:  types.StringValue("main"),
			Image: types.StringValue("nvcr.io/nvidia/pytorch:24.05-py3"),
		},
		GPU: &workloadGPUModel{
			Count:  types.Int64Value(count),
			Shared: types.BoolValue(false),
		},
		Volumes:           []workloadVolumeModel{},
		WaitForCompletion: types.BoolValue(true),
		WaitForRollout:    types.BoolValue(true),
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
		gpu         workloadGPUModel
		want        []corev1.NodeSelectorTerm // nil: no affinity at all
	}{
		{
			description: "A count alone needs no affinity: the resource limit finds GPU nodes.",
			gpu:         workloadGPUModel{Count: types.Int64Value(1)},
		},
		{
			description: "Products become one In requirement.",
			gpu:         workloadGPUModel{Count: types.Int64Value(2), Products: []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"}},
			want: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				requirement(product, corev1.NodeSelectorOpIn, "NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"),
			}}},
		},
		{
			description: "Shared products also accept GFD's -SHARED spelling.",
			gpu:         workloadGPUModel{Count: types.Int64Value(1), Shared: types.BoolValue(true), Products: []string{"Tesla-T4"}},
			want: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				requirement(product, corev1.NodeSelectorOpIn, "Tesla-T4", "Tesla-T4-SHARED"),
			}}},
		},
		{
			description: "40 GiB becomes memory greater than 40959 MiB, so a 40960 MiB A100 matches.",
			gpu:         workloadGPUModel{Count: types.Int64Value(1), MinMemoryGiB: types.Int64Value(40)},
			want: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				requirement(memory, corev1.NodeSelectorOpGt, "40959"),
			}}},
		},
		{
			description: "Compute capability 8.0 is one term: major greater than 7.",
			gpu:         workloadGPUModel{Count: types.Int64Value(1), MinComputeCapability: types.StringValue("8.0")},
			want: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				requirement(major, corev1.NodeSelectorOpGt, "7"),
			}}},
		},
		{
			description: "Compute capability 8.6 is two ORed terms, each repeating the other criteria: major > 8, or major 8 and minor > 5.",
			gpu: workloadGPUModel{Count: types.Int64Value(1), Products: []string{"NVIDIA-A10G", "NVIDIA-H100-80GB-HBM3"},
				MinMemoryGiB: types.Int64Value(20), MinComputeCapability: types.StringValue("8.6")},
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
			affinity, err := gpuNodeAffinity(&tt.gpu)
			require.NoError(t, err)
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
		gpu         workloadGPUModel
		want        corev1.ResourceName
	}{
		{"Whole GPUs are nvidia.com/gpu.", workloadGPUModel{}, "nvidia.com/gpu"},
		{"A share of a time-sliced GPU is nvidia.com/gpu.shared.", workloadGPUModel{Shared: types.BoolValue(true)}, "nvidia.com/gpu.shared"},
		{"A MIG profile is nvidia.com/mig-<profile>.", workloadGPUModel{MIGProfile: types.StringValue("1g.10gb")}, "nvidia.com/mig-1g.10gb"},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			require.Equal(t, tt.want, gpuResourceName(&tt.gpu))
		})
	}
}

func TestWorkloadPodTemplate(t *testing.T) {
	m := testWorkload(2)
	m.GPU.MIGProfile = types.StringValue("3g.40gb")
	m.Container.CPURequest = types.StringValue("4")
	m.Container.MemoryLimit = types.StringValue("64Gi")
	m.Container.Env = map[string]string{"B": "2", "A": "1"}
	m.ShmSize = types.StringValue("16Gi")
	m.Volumes = []workloadVolumeModel{{Name: types.StringValue("data"), ClaimName: types.StringValue("imagenet"), MountPath: types.StringValue("/data"), ReadOnly: types.BoolValue(true)}}
	m.Tolerations = []tolerationModel{{Key: types.StringValue("dedicated"), Operator: types.StringValue("Equal"), Value: types.StringValue("ml"), Effect: types.StringValue("NoSchedule")}}

	job, err := m.job()
	require.NoError(t, err)
	spec := job.Spec.Template.Spec
	require.Equal(t, corev1.RestartPolicyNever, spec.RestartPolicy)
	require.Equal(t, "train", job.Labels[workloadLabel])
	require.Equal(t, "train", job.Spec.Template.Labels[workloadLabel])
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

func requireQuantity(t *testing.T, want string, got k8sresource.Quantity) {
	t.Helper()
	wantQ := k8sresource.MustParse(want)
	require.Zero(t, wantQ.Cmp(got), "want %s, got %s", want, got.String())
}

func TestWorkloadDeploymentSelectsItsPods(t *testing.T) {
	m := testWorkload(1)
	m.Kind = types.StringValue(workloadKindDeployment)
	m.Metadata.Labels = map[string]string{"team": "ml"}
	dep, err := m.deployment()
	require.NoError(t, err)
	require.Equal(t, map[string]string{workloadLabel: "train"}, dep.Spec.Selector.MatchLabels)
	require.Equal(t, map[string]string{workloadLabel: "train", "team": "ml"}, dep.Spec.Template.Labels)
	require.Equal(t, corev1.RestartPolicyAlways, dep.Spec.Template.Spec.RestartPolicy)
	require.Equal(t, int32(1), *dep.Spec.Replicas)
	require.NotContains(t, m.Metadata.Labels, workloadLabel, "building must not write into the model's labels")
}
