package provider

import (
	"context"
	"maps"
	"slices"
	"sort"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"
)

// jobChanges changes one attribute of fullWorkload(job) each, keyed by
// the attribute's path in the schema, with whether the Job is replaced.
// TestWorkloadJobChangesCoverTheSchema fails when an attribute of the
// schema has no row here.
var jobChanges = map[string]struct {
	change  func(m *workloadModel)
	replace bool
}{
	"kind":                             {nil, true}, // its own RequiresReplace plan modifier, for every kind
	"metadata.name":                    {func(m *workloadModel) { m.Metadata.Name = types.StringValue("train2") }, true},
	"metadata.namespace":               {func(m *workloadModel) { m.Metadata.Namespace = types.StringValue("ml") }, true},
	"metadata.labels":                  {func(m *workloadModel) { m.Metadata.Labels = map[string]string{"team": "research"} }, true},
	"metadata.annotations":             {func(m *workloadModel) { m.Metadata.Annotations = nil }, true},
	"container.name":                   {func(m *workloadModel) { m.Container.Name = types.StringValue("trainer") }, true},
	"container.image":                  {func(m *workloadModel) { m.Container.Image = types.StringValue("nvcr.io/nvidia/pytorch:24.06-py3") }, true},
	"container.command":                {func(m *workloadModel) { m.Container.Command = []string{"python"} }, true},
	"container.args":                   {func(m *workloadModel) { m.Container.Args = nil }, true},
	"container.env":                    {func(m *workloadModel) { m.Container.Env = map[string]string{"NCCL_DEBUG": "WARN"} }, true},
	"container.working_dir":            {func(m *workloadModel) { m.Container.WorkingDir = types.StringNull() }, true},
	"container.cpu_request":            {func(m *workloadModel) { m.Container.CPURequest = types.StringValue("4") }, true},
	"container.memory_request":         {func(m *workloadModel) { m.Container.MemoryRequest = types.StringValue("32Gi") }, true},
	"container.cpu_limit":              {func(m *workloadModel) { m.Container.CPULimit = types.StringValue("8") }, true},
	"container.memory_limit":           {func(m *workloadModel) { m.Container.MemoryLimit = types.StringValue("256Gi") }, true},
	"gpu.count":                        {func(m *workloadModel) { m.GPU.Count = types.Int64Value(4) }, true},
	"gpu.products":                     {func(m *workloadModel) { m.GPU.Products = []string{"NVIDIA-H100-80GB-HBM3"} }, true},
	"gpu.min_memory_gib":               {func(m *workloadModel) { m.GPU.MinMemoryGiB = types.Int64Value(40) }, true},
	"gpu.min_compute_capability":       {func(m *workloadModel) { m.GPU.MinComputeCapability = types.StringValue("9.0") }, true},
	"gpu.shared":                       {func(m *workloadModel) { m.GPU.Shared = types.BoolValue(true) }, true},
	"gpu.mig_profile":                  {func(m *workloadModel) { m.GPU.MIGProfile = types.StringValue("3g.40gb") }, true},
	"gpu.allocation":                   {nil, true}, // its own RequiresReplace plan modifier, for every kind
	"gpu.min_cuda_version":             {func(m *workloadModel) { m.GPU.MinCUDAVersion = types.StringValue("12.4") }, true},
	"job.backoff_limit":                {func(m *workloadModel) { m.Job.BackoffLimit = types.Int64Value(0) }, false},
	"job.completions":                  {func(m *workloadModel) { m.Job.Completions = types.Int64Value(8) }, true},
	"job.parallelism":                  {func(m *workloadModel) { m.Job.Parallelism = types.Int64Value(4) }, false},
	"job.active_deadline_seconds":      {func(m *workloadModel) { m.Job.ActiveDeadlineSeconds = types.Int64Null() }, false},
	"job.ttl_seconds_after_finished":   {func(m *workloadModel) { m.Job.TTLSecondsAfterFinished = types.Int64Value(0) }, false},
	"job.suspend":                      {func(m *workloadModel) { m.Job.Suspend = types.BoolValue(true) }, false},
	"job.restart_policy":               {func(m *workloadModel) { m.Job.RestartPolicy = types.StringValue("Never") }, true},
	"deployment.replicas":              {nil, false}, // only with kind = "deployment"
	"deployment.strategy":              {nil, false},
	"volume.name":                      {func(m *workloadModel) { m.Volumes[0].Name = types.StringValue("scratch") }, true},
	"volume.claim_name":                {func(m *workloadModel) { m.Volumes[0].ClaimName = types.StringValue("other") }, true},
	"volume.mount_path":                {func(m *workloadModel) { m.Volumes[0].MountPath = types.StringValue("/scratch") }, true},
	"volume.read_only":                 {func(m *workloadModel) { m.Volumes[0].ReadOnly = types.BoolValue(true) }, true},
	"service_account":                  {func(m *workloadModel) { m.ServiceAccount = types.StringNull() }, true},
	"image_pull_secrets":               {func(m *workloadModel) { m.ImagePullSecrets = []string{"ngc", "ecr"} }, true},
	"runtime_class_name":               {func(m *workloadModel) { m.RuntimeClassName = types.StringValue("nvidia-cdi") }, true},
	"node_selector":                    {func(m *workloadModel) { m.NodeSelector = map[string]string{"pool": "batch"} }, true},
	"tolerations":                      {func(m *workloadModel) { m.Tolerations = nil }, true},
	"shm_size":                         {func(m *workloadModel) { m.ShmSize = types.StringValue("32Gi") }, true},
	"wait_for_completion":              {func(m *workloadModel) { m.WaitForCompletion = types.BoolValue(false) }, false},
	"wait_for_rollout":                 {func(m *workloadModel) { m.WaitForRollout = types.BoolValue(false) }, false},
	"timeouts":                         {func(m *workloadModel) { m.Timeouts = testTimeouts("2h") }, false},
	"container.cpu_request (spelling)": {func(m *workloadModel) { m.Container.CPURequest = types.StringValue("8000m") }, false},
}

// testTimeouts is a timeouts block with create set, or none for "".
func testTimeouts(create string) timeouts.Value {
	attrTypes := map[string]attr.Type{"create": types.StringType, "update": types.StringType, "delete": types.StringType}
	if create == "" {
		return timeouts.Value{Object: types.ObjectNull(attrTypes)}
	}
	return timeouts.Value{Object: types.ObjectValueMust(attrTypes, map[string]attr.Value{
		"create": types.StringValue(create), "update": types.StringNull(), "delete": types.StringNull(),
	})}
}

func TestWorkloadJobModifyPlanReplacesOnlyWhatKubernetesCannotChange(t *testing.T) {
	ctx := context.Background()
	s := workloadSchema(ctx)
	for _, name := range slices.Sorted(maps.Keys(jobChanges)) {
		row := jobChanges[name]
		if row.change == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			prior := fullWorkload(workloadKindJob)
			planned := fullWorkload(workloadKindJob)
			row.change(planned)
			req := resource.ModifyPlanRequest{State: stateOf(t, s, prior), Plan: planOf(t, s, planned)}
			resp := &resource.ModifyPlanResponse{Plan: req.Plan}
			(&WorkloadResource{}).ModifyPlan(ctx, req, resp)
			require.False(t, resp.Diagnostics.HasError(), "%v", resp.Diagnostics)
			if !row.replace {
				require.Empty(t, resp.RequiresReplace, "Kubernetes changes this in place")
				return
			}
			require.NotEmpty(t, resp.RequiresReplace)
			for _, p := range resp.RequiresReplace {
				require.NotEqual(t, path.Root("wait_for_completion"), p, "only what changes the Job is named")
			}
		})
	}
}

func TestWorkloadDeploymentModifyPlanReplacesNothing(t *testing.T) {
	ctx := context.Background()
	s := workloadSchema(ctx)
	prior := fullWorkload(workloadKindDeployment)
	planned := fullWorkload(workloadKindDeployment)
	planned.Container.Image = types.StringValue("nvcr.io/nvidia/pytorch:24.06-py3")
	planned.Deployment.Replicas = types.Int64Value(5)
	req := resource.ModifyPlanRequest{State: stateOf(t, s, prior), Plan: planOf(t, s, planned)}
	resp := &resource.ModifyPlanResponse{Plan: req.Plan}
	(&WorkloadResource{}).ModifyPlan(ctx, req, resp)
	require.Empty(t, resp.RequiresReplace, "a Deployment is updated in place")
}

func TestWorkloadDRAModifyPlanReplacesOnAnyGPUChange(t *testing.T) {
	ctx := context.Background()
	s := workloadSchema(ctx)
	for _, kind := range workloadKinds {
		t.Run(kind, func(t *testing.T) {
			prior := fullWorkload(kind)
			prior.GPU.Allocation = types.StringValue("dra")
			planned := fullWorkload(kind)
			planned.GPU.Allocation = types.StringValue("dra")
			planned.GPU.Alternatives = []gpuChoiceModel{{Count: types.Int64Value(2), Products: []string{"NVIDIA-A100-SXM4-80GB"}}}
			req := resource.ModifyPlanRequest{State: stateOf(t, s, prior), Plan: planOf(t, s, planned)}
			resp := &resource.ModifyPlanResponse{Plan: req.Plan}
			(&WorkloadResource{}).ModifyPlan(ctx, req, resp)
			require.Contains(t, resp.RequiresReplace, gpuBlockPath,
				"the criteria are in the ResourceClaimTemplate, whose spec never changes, so the pods and their template are made again")
		})
	}
}

func TestWorkloadJobChangesCoverTheSchema(t *testing.T) {
	s := workloadSchema(context.Background())
	var missing []string
	for _, p := range schemaPaths(s) {
		if _, ok := jobChanges[p]; !ok {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "add a row to jobChanges for each new attribute: does changing it replace a Job?")
}

// schemaPaths are the paths of the schema's configurable attributes, with
// nested blocks' attributes as block.attribute, and the timeouts block whole.
func schemaPaths(s schema.Schema) []string {
	var out []string
	for name, a := range s.Attributes {
		if a.IsComputed() && !a.IsOptional() && !a.IsRequired() {
			continue
		}
		out = append(out, name)
	}
	for name, b := range s.Blocks {
		var attrs map[string]schema.Attribute
		switch b := b.(type) {
		case schema.SingleNestedBlock:
			attrs = b.Attributes
		case schema.ListNestedBlock:
			attrs = b.NestedObject.Attributes
		}
		if name == "timeouts" {
			out = append(out, name)
			continue
		}
		for attrName := range attrs {
			out = append(out, name+"."+attrName)
		}
	}
	return out
}

func stateOf(t *testing.T, s schema.Schema, m *workloadModel) tfsdk.State {
	t.Helper()
	fillForState(m)
	st := tfsdk.State{Schema: s}
	require.False(t, st.Set(context.Background(), m).HasError())
	return st
}

func planOf(t *testing.T, s schema.Schema, m *workloadModel) tfsdk.Plan {
	t.Helper()
	st := stateOf(t, s, m)
	return tfsdk.Plan{Schema: s, Raw: st.Raw}
}

// fillForState sets what a test model leaves zero and a state must hold.
func fillForState(m *workloadModel) {
	m.ID = types.StringValue(m.identity())
	if len(m.Timeouts.Object.AttributeTypes(context.Background())) == 0 {
		m.Timeouts = testTimeouts("")
	}
	m.setStatus(nil)
}
