package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
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
			RestartPolicy: types.StringValue("OnFailure"),
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

func TestWorkloadRefreshReadsBackWhatWasBuilt(t *testing.T) {
	tests := []struct {
		description string
		model       *workloadModel
		refresh     func(t *testing.T, m, into *workloadModel)
	}{
		{
			description: "A job with every attribute set reads back the same after an import.",
			model:       fullWorkload(workloadKindJob),
			refresh: func(t *testing.T, m, into *workloadModel) {
				job, err := m.job()
				require.NoError(t, err)
				into.refreshFromJob(job)
			},
		},
		{
			description: "A deployment with every attribute set reads back the same after an import.",
			model:       fullWorkload(workloadKindDeployment),
			refresh: func(t *testing.T, m, into *workloadModel) {
				dep, err := m.deployment()
				require.NoError(t, err)
				into.refreshFromDeployment(dep)
			},
		},
		{
			description: "A minimal job reads back without job block: its settings are the defaults.",
			model:       testWorkload(1),
			refresh: func(t *testing.T, m, into *workloadModel) {
				job, err := m.job()
				require.NoError(t, err)
				into.refreshFromJob(job)
			},
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
			refresh: func(t *testing.T, m, into *workloadModel) {
				job, err := m.job()
				require.NoError(t, err)
				into.refreshFromJob(job)
			},
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
	job, err := m.job()
	require.NoError(t, err)
	// The API server writes quantities in canonical form.
	c := &job.Spec.Template.Spec.Containers[0]
	c.Resources.Requests["cpu"] = resource.MustParse("500m")
	c.Resources.Limits["memory"] = resource.MustParse("1Gi")

	m.refreshFromJob(job)
	require.Equal(t, "0.5", m.Container.CPURequest.ValueString())
	require.Equal(t, "1024Mi", m.Container.MemoryLimit.ValueString())

	c.Resources.Requests["cpu"] = resource.MustParse("2")
	m.refreshFromJob(job)
	require.Equal(t, "2", m.Container.CPURequest.ValueString(), "a different amount is drift and shows as the server writes it")
}

func TestWorkloadRefreshShowsOutOfBandChanges(t *testing.T) {
	m := fullWorkload(workloadKindDeployment)
	dep, err := m.deployment()
	require.NoError(t, err)
	dep.Spec.Template.Spec.Containers[0].Image = "nvcr.io/nvidia/pytorch:24.06-py3"
	dep.Spec.Replicas = ptrInt32(5)
	dep.Annotations["deployment.kubernetes.io/revision"] = "2"

	m.refreshFromDeployment(dep)
	require.Equal(t, "nvcr.io/nvidia/pytorch:24.06-py3", m.Container.Image.ValueString())
	require.Equal(t, int64(5), m.Deployment.Replicas.ValueInt64())
	require.Equal(t, map[string]string{"example.com/owner": "ml-platform"}, m.Metadata.Annotations, "Kubernetes' own annotations are not drift")
}

func TestWorkloadRefreshWritesJobBlockOnlyWhenNeeded(t *testing.T) {
	m := testWorkload(1)
	job, err := m.job()
	require.NoError(t, err)
	m.refreshFromJob(job)
	require.Nil(t, m.Job, "default settings and no job block in the state: none is added")

	job.Spec.BackoffLimit = ptrInt32(0)
	m.refreshFromJob(job)
	require.NotNil(t, m.Job, "a setting changed out of band shows as a job block")
	require.Equal(t, int64(0), m.Job.BackoffLimit.ValueInt64())
}

func ptrInt32(v int32) *int32 { return &v }
