package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
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
			Count:        types.Int64Value(count),
			Shared:       types.BoolValue(false),
			Allocation:   types.StringValue("device_plugin"),
			Alternatives: []gpuChoiceModel{},
		},
		Volumes:           []workloadVolumeModel{},
		WaitForCompletion: types.BoolValue(true),
		WaitForRollout:    types.BoolValue(true),
	}
}

func TestWorkloadToSpec(t *testing.T) {
	m := fullWorkload(workloadKindJob)
	m.Job.Suspend = types.BoolValue(true)
	spec, err := m.toSpec()
	require.NoError(t, err)
	require.Equal(t, kube.WorkloadJob, spec.Kind)
	require.Equal(t, "default/train", spec.ID())
	require.Equal(t, int32(4), *spec.Job.Completions)
	require.Equal(t, int64(3600), *spec.Job.ActiveDeadlineSeconds)
	require.True(t, spec.Job.Suspend)
	require.Equal(t, corev1.RestartPolicyOnFailure, spec.Job.RestartPolicy)
	require.Equal(t, "64Gi", spec.Pod.Container.MemoryRequest.String())
	require.Equal(t, "16Gi", spec.Pod.ShmSize.String())
	require.Equal(t, &kube.ComputeCapability{Major: 8, Minor: 6}, spec.Pod.GPU.MinCompute)
	require.Equal(t, int64(79), spec.Pod.GPU.MinMemoryGiB)
	require.Equal(t, []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrInt64(30)}},
		spec.Pod.Tolerations, "the GPU toleration is kube's to add, not the model's")

	minimal, err := testWorkload(1).toSpec()
	require.NoError(t, err)
	require.Equal(t, int32(defaultBackoffLimit), *minimal.Job.BackoffLimit, "without a job block the defaults apply")
	require.Nil(t, minimal.Pod.Container.CPURequest)
	require.Nil(t, minimal.Pod.ShmSize)

	bad := testWorkload(1)
	bad.Container.CPULimit = types.StringValue("lots")
	_, err = bad.toSpec()
	require.ErrorContains(t, err, "container.cpu_limit", "a quantity that does not parse names its attribute")
}

func ptrInt64(v int64) *int64 { return &v }
