package k8s

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

func TestDRANodeRegistersWithoutDevicePluginGPUs(t *testing.T) {
	node, err := nodeObject(NodeSpec{Name: "n", InstanceType: mustInstanceType("p5.48xlarge"), DRA: true, MIGDevices: []string{"3g.40gb", "3g.40gb"}})
	require.NoError(t, err)
	require.NotContains(t, node.Status.Capacity, corev1.ResourceName(gpulabels.ResourceName))
	require.NotContains(t, node.Status.Allocatable, corev1.ResourceName(gpulabels.ResourceName))
	require.Equal(t, "true", node.Labels[DRANodeLabel])
	require.Equal(t, "3g.40gb,3g.40gb", node.Annotations[MIGDevicesAnnotation])
	require.Contains(t, node.Spec.Taints, corev1.Taint{Key: gpulabels.TaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}, "still a GPU node")

	plain, err := nodeObject(NodeSpec{Name: "m", InstanceType: mustInstanceType("p5.48xlarge")})
	require.NoError(t, err)
	require.NotContains(t, plain.Labels, DRANodeLabel)
	require.NotContains(t, plain.Annotations, MIGDevicesAnnotation)
}

func TestDRANodeSpecsThatCannotBeAreRefused(t *testing.T) {
	for _, tc := range []struct {
		description string
		spec        NodeSpec
		wantErr     string
	}{
		{description: "DRA on a node without GPUs", spec: NodeSpec{Name: "n", InstanceType: mustInstanceType("m5.xlarge"), DRA: true}, wantErr: "has no NVIDIA GPUs"},
		{description: "MIG devices on a device-plugin node", spec: NodeSpec{Name: "n", InstanceType: mustInstanceType("p5.48xlarge"), MIGDevices: []string{"1g.10gb"}}, wantErr: "set DRA too"},
		{description: "MIG devices on a GPU without MIG", spec: NodeSpec{Name: "n", InstanceType: mustInstanceType("g6.xlarge"), DRA: true, MIGDevices: []string{"1g.10gb"}}, wantErr: "no MIG profile table for NVIDIA L4"},
		{description: "more MIG memory than the GPU has", spec: NodeSpec{Name: "n", InstanceType: mustInstanceType("p4d.24xlarge"), DRA: true, MIGDevices: []string{"4g.20gb", "3g.20gb", "1g.5gb"}}, wantErr: "do not fit together"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			_, err := nodeObject(tc.spec)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestDRANodeDevicesAreTheSameEachTime(t *testing.T) {
	node, err := nodeObject(NodeSpec{Name: "dra-a", InstanceType: mustInstanceType("p4d.24xlarge"), DRA: true})
	require.NoError(t, err)
	first, err := draNodeDevices(node)
	require.NoError(t, err)
	again, err := draNodeDevices(node)
	require.NoError(t, err)
	require.Equal(t, first, again, "the plugin finds the same GPUs after a restart")

	other, err := nodeObject(NodeSpec{Name: "dra-b", InstanceType: mustInstanceType("p4d.24xlarge"), DRA: true})
	require.NoError(t, err)
	otherDevices, err := draNodeDevices(other)
	require.NoError(t, err)
	uuids := map[string]bool{}
	for _, d := range append(first, otherDevices...) {
		uuid := *d.Attributes[nvdra.AttrUUID].StringValue
		require.Regexp(t, `^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, uuid)
		require.False(t, uuids[uuid], "UUID %s twice", uuid)
		uuids[uuid] = true
	}
	require.Len(t, uuids, 16)
}
