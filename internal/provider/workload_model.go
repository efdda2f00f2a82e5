package provider

import (
	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// The values of `kind`.
const (
	workloadKindJob        = string(kube.WorkloadJob)
	workloadKindDeployment = string(kube.WorkloadDeployment)
)

// workloadModel is a gpu_workload. Collections are Go slices and maps: the
// resource reads them only from plans and states, where they are known;
// ValidateConfig and ModifyPlan look at single attributes instead.
type workloadModel struct {
	ID         types.String             `tfsdk:"id"`
	OwnerID    types.String             `tfsdk:"owner_id"`
	Kind       types.String             `tfsdk:"kind"`
	Metadata   *workloadMetadataModel   `tfsdk:"metadata"`
	Container  *workloadContainerModel  `tfsdk:"container"`
	GPU        *workloadGPUModel        `tfsdk:"gpu"`
	Job        *workloadJobModel        `tfsdk:"job"`
	Deployment *workloadDeploymentModel `tfsdk:"deployment"`
	Volumes    []workloadVolumeModel    `tfsdk:"volume"`
	Timeouts   timeouts.Value           `tfsdk:"timeouts"`

	ServiceAccount    types.String      `tfsdk:"service_account"`
	ImagePullSecrets  []string          `tfsdk:"image_pull_secrets"`
	RuntimeClassName  types.String      `tfsdk:"runtime_class_name"`
	NodeSelector      map[string]string `tfsdk:"node_selector"`
	Tolerations       []tolerationModel `tfsdk:"tolerations"`
	ShmSize           types.String      `tfsdk:"shm_size"`
	WaitForCompletion types.Bool        `tfsdk:"wait_for_completion"`
	WaitForRollout    types.Bool        `tfsdk:"wait_for_rollout"`
	ClaimTemplate     types.String      `tfsdk:"resource_claim_template"`

	workloadStatusModel
}

// workloadStatusModel is what the cluster reports about a workload.
type workloadStatusModel struct {
	Status         types.String `tfsdk:"status"`
	NodeNames      types.List   `tfsdk:"node_names"`
	StartTime      types.String `tfsdk:"start_time"`
	CompletionTime types.String `tfsdk:"completion_time"`
	Succeeded      types.Int64  `tfsdk:"succeeded"`
	Failed         types.Int64  `tfsdk:"failed"`
}

type workloadMetadataModel struct {
	Name        types.String      `tfsdk:"name"`
	Namespace   types.String      `tfsdk:"namespace"`
	Labels      map[string]string `tfsdk:"labels"`
	Annotations map[string]string `tfsdk:"annotations"`
}

type workloadContainerModel struct {
	Name          types.String      `tfsdk:"name"`
	Image         types.String      `tfsdk:"image"`
	Command       []string          `tfsdk:"command"`
	Args          []string          `tfsdk:"args"`
	Env           map[string]string `tfsdk:"env"`
	WorkingDir    types.String      `tfsdk:"working_dir"`
	CPURequest    types.String      `tfsdk:"cpu_request"`
	MemoryRequest types.String      `tfsdk:"memory_request"`
	CPULimit      types.String      `tfsdk:"cpu_limit"`
	MemoryLimit   types.String      `tfsdk:"memory_limit"`
}

type workloadGPUModel struct {
	Count                types.Int64      `tfsdk:"count"`
	Products             []string         `tfsdk:"products"`
	MinMemoryGiB         types.Int64      `tfsdk:"min_memory_gib"`
	MinComputeCapability types.String     `tfsdk:"min_compute_capability"`
	Shared               types.Bool       `tfsdk:"shared"`
	MIGProfile           types.String     `tfsdk:"mig_profile"`
	Allocation           types.String     `tfsdk:"allocation"`
	MinCUDAVersion       types.String     `tfsdk:"min_cuda_version"`
	Alternatives         []gpuChoiceModel `tfsdk:"alternative"`
}

// gpuChoiceModel is one alternative block of gpu.
type gpuChoiceModel struct {
	Count                types.Int64  `tfsdk:"count"`
	Products             []string     `tfsdk:"products"`
	MinMemoryGiB         types.Int64  `tfsdk:"min_memory_gib"`
	MinComputeCapability types.String `tfsdk:"min_compute_capability"`
	MIGProfile           types.String `tfsdk:"mig_profile"`
}

type workloadJobModel struct {
	BackoffLimit            types.Int64  `tfsdk:"backoff_limit"`
	Completions             types.Int64  `tfsdk:"completions"`
	Parallelism             types.Int64  `tfsdk:"parallelism"`
	ActiveDeadlineSeconds   types.Int64  `tfsdk:"active_deadline_seconds"`
	TTLSecondsAfterFinished types.Int64  `tfsdk:"ttl_seconds_after_finished"`
	RestartPolicy           types.String `tfsdk:"restart_policy"`
	Suspend                 types.Bool   `tfsdk:"suspend"`
}

type workloadDeploymentModel struct {
	Replicas types.Int64  `tfsdk:"replicas"`
	Strategy types.String `tfsdk:"strategy"`
}

type workloadVolumeModel struct {
	Name      types.String `tfsdk:"name"`
	ClaimName types.String `tfsdk:"claim_name"`
	MountPath types.String `tfsdk:"mount_path"`
	ReadOnly  types.Bool   `tfsdk:"read_only"`
}

// defaultJobSettings are what a job gets without a `job` block.
func defaultJobSettings() workloadJobModel {
	return workloadJobModel{
		BackoffLimit:            types.Int64Value(defaultBackoffLimit),
		Completions:             types.Int64Value(1),
		Parallelism:             types.Int64Value(1),
		ActiveDeadlineSeconds:   types.Int64Null(),
		TTLSecondsAfterFinished: types.Int64Null(),
		RestartPolicy:           types.StringValue(defaultJobRestartPolicy),
		Suspend:                 types.BoolValue(false),
	}
}

// defaultDeploymentSettings are what a deployment gets without a `deployment` block.
func defaultDeploymentSettings() workloadDeploymentModel {
	return workloadDeploymentModel{
		Replicas: types.Int64Value(defaultDeploymentReplica),
		Strategy: types.StringValue(defaultStrategy),
	}
}

// jobSettings returns the job block, or its defaults when it is left out.
func (m *workloadModel) jobSettings() workloadJobModel {
	if m.Job != nil {
		return *m.Job
	}
	return defaultJobSettings()
}

// deploymentSettings returns the deployment block, or its defaults.
func (m *workloadModel) deploymentSettings() workloadDeploymentModel {
	if m.Deployment != nil {
		return *m.Deployment
	}
	return defaultDeploymentSettings()
}

func (m *workloadModel) namespace() string { return m.Metadata.Namespace.ValueString() }
func (m *workloadModel) name() string      { return m.Metadata.Name.ValueString() }

// identity is "namespace/name", the ID and the form errors name a workload by.
func (m *workloadModel) identity() string { return m.namespace() + "/" + m.name() }

// ref names the workload of a state on the cluster.
func (m *workloadModel) ref() kube.WorkloadRef {
	ref := kube.WorkloadRef{Kind: kube.WorkloadKind(m.Kind.ValueString()), Namespace: m.namespace(), Name: m.name()}
	if m.Container != nil {
		ref.Container = m.Container.Name.ValueString()
	}
	ref.DRA = m.GPU != nil && m.GPU.Allocation.ValueString() == string(kube.AllocateDRA)
	return ref
}
