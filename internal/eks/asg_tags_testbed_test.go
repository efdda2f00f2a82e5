package eks

// The cluster-autoscaler's node-template tags on a node group's Auto Scaling
// group: synced to what is wanted, and only the keys this package set go.

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/stretchr/testify/require"
)

func TestAutoScalingGroupTagsSyncTouchesOnlyItsOwnKeys(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	g := createForTest(t, c, gpuSpec(uniqueName("asg")))
	require.NotEmpty(t, g.AutoScalingGroupNames)
	asg := g.AutoScalingGroupNames[0]

	// Someone else's tag on the same group.
	_, err := c.asg.CreateOrUpdateTags(context.Background(), &autoscaling.CreateOrUpdateTagsInput{Tags: []asgtypes.Tag{asgTag(asg, "team", "ml")}})
	require.NoError(t, err)
	before, err := c.AutoScalingGroupTags(ctx, asg)
	require.NoError(t, err)

	first := NodeTemplateTags(map[string]string{"gpu": "a10g"}, []Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: "NO_SCHEDULE"}}, 1)
	require.NoError(t, c.SyncAutoScalingGroupTags(ctx, g.AutoScalingGroupNames, nil, first))
	tags, err := c.AutoScalingGroupTags(ctx, asg)
	require.NoError(t, err)
	for k, v := range first {
		require.Equal(t, v, tags[k], k)
	}
	require.Equal(t, tags, emu.AutoScalingGroupTags(asg), "what DescribeTags reads is what the emulator holds")

	second := NodeTemplateTags(map[string]string{"gpu": "a10g", "tier": "batch"}, nil, 1)
	require.NoError(t, c.SyncAutoScalingGroupTags(ctx, g.AutoScalingGroupNames, first, second))
	tags, err = c.AutoScalingGroupTags(ctx, asg)
	require.NoError(t, err)
	want := map[string]string{}
	for k, v := range before {
		want[k] = v
	}
	for k, v := range second {
		want[k] = v
	}
	require.Equal(t, want, tags, "the dropped taint's tag is gone; the other tags, EKS's and the team's, stay")
	require.Equal(t, "ml", tags["team"])
	require.NotContains(t, tags, "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu")
}
