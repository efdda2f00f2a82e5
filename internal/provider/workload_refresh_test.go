package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// fullWorkload sets every attribute the pod template carries.
func fullWorkload(kind string) *workloadModel {
	m := testWorkload(2)
	m.Kind = types.StringValue(kind)
	m.Metadata.Labels = map[string]string{"team": "ml"}
	m.Metadata.Annotations = map[string]string{"example.com/owner": "ml-platform"}
	m.Container.Command = []string{"torchrun"}
	m.Container.Args = []string{"--nproc_per_node=2", "train.py"}
	m.Container.Env = map[string]string{"NCCL_DEBUG": "INFO"}
	m.Container.WorkingDir = types.StringValue("/workspace")
	m.Container.CPURequest = types.StringValue("8")
	m.Container.MemoryRequest = types.StringValue("64Gi")
	m.Container.CPULimit = types.StringValue("16")
	m.Container.MemoryLimit = types.StringValue("128Gi")
	m.GPU.Products = []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"}
	m.GPU.MinMemoryGiB = types.Int64Value(79)
	m.GPU.MinComputeCapability = types.StringValue("8.6")
	m.ServiceAccount = types.StringValue("trainer")
	m.ImagePullSecrets = []string{"ngc"}
	m.RuntimeClassName = types.StringValue("nvidia")
	m.NodeSelector = map[string]string{"pool": "training"}
	m.Tolerations = []tolerationModel{{
		Key: types.StringValue("spot"), Operator: types.StringValue("Exists"), Value: types.StringNull(),
		Effect: types.StringValue("NoExecute"), TolerationSeconds: types.Int64Value(30),
	}}
	m.ShmSize = types.StringValue("16Gi")
	m.Volumes = []workloadVolumeModel{{
		Name: types.StringValue("workspace"), ClaimName: types.StringValue("train-workspace"),
		MountPath: types.StringValue("/workspace"), ReadOnly: types.BoolValue(false),
	}}
	if kind == workloadKindJob {
		m.Job = &workloadJobModel{
			BackoffLimit: types.Int64Value(2), Completions: types.Int64Value(4), Parallelism: types.Int64Value(2),
			ActiveDeadlineSeconds: types.Int64Value(3600), TTLSecondsAfterFinished: types.Int64Value(600),
			RestartPolicy: types.StringValue("OnFailure"), Suspend: types.BoolValue(false),
		}
	} else {
		m.Deployment = &workloadDeploymentModel{Replicas: types.Int64Value(3), Strategy: types.StringValue("Recreate")}
	}
	return m
}

// imported is what ImportState leaves in the state: kind and metadata's name and namespace.
func imported(m *workloadModel) *workloadModel {
	return &workloadModel{
		Kind:     m.Kind,
		Metadata: &workloadMetadataModel{Name: m.Metadata.Name, Namespace: m.Metadata.Namespace},
	}
}

// throughTheCluster reads m back into into as Read does: m's spec, the
// object kube builds from it, the spec kube reads from that object.
func throughTheCluster(t *testing.T, m, into *workloadModel) {
	t.Helper()
	spec, err := m.toSpec()
	require.NoError(t, err)
	if spec.Kind == kube.WorkloadDeployment {
		into.setFromSpec(kube.DeploymentWorkloadSpec(kube.BuildDeployment(spec), spec.Pod.Container.Name))
		return
	}
	into.setFromSpec(kube.JobWorkloadSpec(kube.BuildJob(spec), spec.Pod.Container.Name))
}

// liveSpec is the spec of m as Read gets it back from the cluster.
func liveSpec(t *testing.T, m *workloadModel) kube.WorkloadSpec {
	t.Helper()
	spec, err := m.toSpec()
	require.NoError(t, err)
	if spec.Kind == kube.WorkloadDeployment {
		return kube.DeploymentWorkloadSpec(kube.BuildDeployment(spec), spec.Pod.Container.Name)
	}
	return kube.JobWorkloadSpec(kube.BuildJob(spec), spec.Pod.Container.Name)
}

func TestWorkloadRefreshReadsBackWhatWasBuilt(t *testing.T) {
	tests := []struct {
		description string
		model       *workloadModel
		refresh     func(t *testing.T, m, into *workloadModel)
	}{
		{
			description: "A job with every attribute set reads back the same after an import.",
			model:       fullWorkload(workloadKindJob),
			refresh:     throughTheCluster,
		},
		{
			description: "A deployment with every attribute set reads back the same after an import.",
			model:       fullWorkload(workloadKindDeployment),
			refresh:     throughTheCluster,
		},
		{
			description: "A minimal job reads back without job block: its settings are the defaults.",
			model:       testWorkload(1),
			refresh:     throughTheCluster,
		},
		{
			description: "A shared GPU reads back as shared, without GFD's -SHARED products.",
			model: func() *workloadModel {
				m := testWorkload(1)
				m.GPU.Shared = types.BoolValue(true)
				m.GPU.Products = []string{"Tesla-T4"}
				m.GPU.MinComputeCapability = types.StringValue("7.0")
				return m
			}(),
			refresh: throughTheCluster,
		},
		{
			description: "A least CUDA version reads back beside a least compute capability from the four node selector terms they make.",
			model: func() *workloadModel {
				m := testWorkload(1)
				m.GPU.MinComputeCapability = types.StringValue("8.6")
				m.GPU.MinCUDAVersion = types.StringValue("12.4")
				return m
			}(),
			refresh: throughTheCluster,
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			got := imported(tt.model)
			tt.refresh(t, tt.model, got)
			want := *tt.model
			want.ID = types.StringValue("default/train")
			require.Equal(t, want, *got)
		})
	}
}

func TestWorkloadRefreshKeepsTheStateSpellingOfQuantities(t *testing.T) {
	m := testWorkload(1)
	m.Container.CPURequest = types.StringValue("0.5")
	m.Container.MemoryLimit = types.StringValue("1024Mi")
	live := liveSpec(t, m)
	// The API server writes quantities in canonical form.
	live.Pod.Container.CPURequest = ptr.To(resource.MustParse("500m"))
	live.Pod.Container.MemoryLimit = ptr.To(resource.MustParse("1Gi"))

	m.setFromSpec(live)
	require.Equal(t, "0.5", m.Container.CPURequest.ValueString())
	require.Equal(t, "1024Mi", m.Container.MemoryLimit.ValueString())

	live.Pod.Container.CPURequest = ptr.To(resource.MustParse("2"))
	m.setFromSpec(live)
	require.Equal(t, "2", m.Container.CPURequest.ValueString(), "a different amount is drift and shows as the server writes it")
}

func TestWorkloadRefreshShowsOutOfBandChanges(t *testing.T) {
	m := fullWorkload(workloadKindDeployment)
	live := liveSpec(t, m)
	live.Pod.Container.Image = "nvcr.io/nvidia/pytorch:24.06-py3"
	live.Deployment.Replicas = ptr.To(int32(5))

	m.setFromSpec(live)
	require.Equal(t, "nvcr.io/nvidia/pytorch:24.06-py3", m.Container.Image.ValueString())
	require.Equal(t, int64(5), m.Deployment.Replicas.ValueInt64())
	require.Equal(t, map[string]string{"example.com/owner": "ml-platform"}, m.Metadata.Annotations)
}

func TestWorkloadRefreshWritesJobBlockOnlyWhenNeeded(t *testing.T) {
	m := testWorkload(1)
	live := liveSpec(t, m)
	m.setFromSpec(live)
	require.Nil(t, m.Job, "default settings and no job block in the state: none is added")

	live.Job.BackoffLimit = ptr.To(int32(0))
	m.setFromSpec(live)
	require.NotNil(t, m.Job, "a setting changed out of band shows as a job block")
	require.Equal(t, int64(0), m.Job.BackoffLimit.ValueInt64())
}
