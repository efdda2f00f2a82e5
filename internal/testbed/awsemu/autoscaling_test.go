package awsemu

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// emptyGroup creates a node group of no nodes and returns its Auto
// Scaling group's name once it is ACTIVE.
func emptyGroup(t *testing.T, c clients, name string) string {
	t.Helper()
	deleteGroupAtEnd(t, name)
	if _, err := c.eks.CreateNodegroup(context.Background(), gpuGroupInput(name, "g5.xlarge", "AL2023_x86_64_NVIDIA", 0, 0, 2)); err != nil {
		t.Fatal(err)
	}
	ng := waitNodegroupStatus(t, c, name, ekstypes.NodegroupStatusActive)
	return aws.ToString(ng.Resources.AutoScalingGroups[0].Name)
}

func TestAutoScalingGroupTags(t *testing.T) {
	requireTestbed(t)
	ctx := context.Background()
	c := testClients()
	asgName := emptyGroup(t, c, "tagged")
	if got := emu.AutoScalingGroupTags(asgName)["eks:nodegroup-name"]; got != "tagged" {
		t.Errorf("EKS's own tag eks:nodegroup-name = %q", got)
	}

	const labelKey = "k8s.io/cluster-autoscaler/node-template/label/nvidia.com/gpu.present"
	const gpuKey = "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"
	tag := func(key, value string) asgtypes.Tag {
		return asgtypes.Tag{ResourceId: aws.String(asgName), ResourceType: aws.String("auto-scaling-group"), Key: aws.String(key), Value: aws.String(value), PropagateAtLaunch: aws.Bool(false)}
	}
	if _, err := c.asg.CreateOrUpdateTags(ctx, &autoscaling.CreateOrUpdateTagsInput{Tags: []asgtypes.Tag{tag(labelKey, "true"), tag(gpuKey, "1")}}); err != nil {
		t.Fatal(err)
	}
	described, err := c.asg.DescribeTags(ctx, &autoscaling.DescribeTagsInput{Filters: []asgtypes.Filter{
		{Name: aws.String("auto-scaling-group"), Values: []string{asgName}},
		{Name: aws.String("key"), Values: []string{gpuKey}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(described.Tags) != 1 || aws.ToString(described.Tags[0].Value) != "1" || aws.ToBool(described.Tags[0].PropagateAtLaunch) {
		t.Errorf("DescribeTags %+v", described.Tags)
	}
	if _, err := c.asg.DeleteTags(ctx, &autoscaling.DeleteTagsInput{Tags: []asgtypes.Tag{tag(gpuKey, "")}}); err != nil {
		t.Fatal(err)
	}
	tags := emu.AutoScalingGroupTags(asgName)
	if _, has := tags[gpuKey]; has || tags[labelKey] != "true" {
		t.Errorf("after DeleteTags: %v", tags)
	}

	groups, err := c.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{asgName}})
	if err != nil {
		t.Fatal(err)
	}
	g := groups.AutoScalingGroups[0]
	if aws.ToInt32(g.MinSize) != 0 || aws.ToInt32(g.MaxSize) != 2 || aws.ToInt32(g.DesiredCapacity) != 0 || len(g.Instances) != 0 {
		t.Errorf("group sizes %d/%d/%d with %d instances", aws.ToInt32(g.MinSize), aws.ToInt32(g.DesiredCapacity), aws.ToInt32(g.MaxSize), len(g.Instances))
	}

	_, err = c.asg.CreateOrUpdateTags(ctx, &autoscaling.CreateOrUpdateTagsInput{Tags: []asgtypes.Tag{{
		ResourceId: aws.String("eks-missing"), ResourceType: aws.String("auto-scaling-group"), Key: aws.String("k"), Value: aws.String("v"),
	}}})
	requireAPIError(t, err, "ValidationError")
}

func TestCallCountsCountAnsweredCalls(t *testing.T) {
	requireTestbed(t)
	c := testClients()
	emu.ResetCallCounts()
	for range 2 {
		if _, err := c.eks.ListNodegroups(context.Background(), &eks.ListNodegroupsInput{ClusterName: aws.String(emu.ClusterName())}); err != nil {
			t.Fatal(err)
		}
	}
	if got := emu.CallCounts()["eks:ListNodegroups"]; got != 2 {
		t.Errorf("eks:ListNodegroups counted %d, want 2", got)
	}
}
