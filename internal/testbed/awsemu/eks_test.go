package awsemu

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

const testNodeRole = "arn:aws:iam::111122223333:role/gpu-nodes"

var testSubnetIDs = []string{"subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002", "subnet-0a1b2c3d4e5f60003", "subnet-0a1b2c3d4e5f60004"}

func TestDescribeClusterIsTheTestbedAPIServer(t *testing.T) {
	requireTestbed(t)
	ctx := context.Background()
	c := testClients()
	out, err := c.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(emu.ClusterName())})
	if err != nil {
		t.Fatal(err)
	}
	cl := out.Cluster
	if got := aws.ToString(cl.Endpoint); got != cluster.APIServerURL() {
		t.Errorf("endpoint = %q, want the testbed API server %q", got, cluster.APIServerURL())
	}
	caPEM, err := base64.StdEncoding.DecodeString(aws.ToString(cl.CertificateAuthority.Data))
	if err != nil {
		t.Fatalf("certificateAuthority.data is not base64: %v", err)
	}
	if string(caPEM) != string(cluster.RESTConfig().CAData) {
		t.Errorf("certificateAuthority.data is not the testbed CA")
	}
	if cl.Status != ekstypes.ClusterStatusActive || aws.ToString(cl.Version) != ClusterVersion() {
		t.Errorf("status %s version %s, want ACTIVE %s", cl.Status, aws.ToString(cl.Version), ClusterVersion())
	}
	list, err := c.eks.ListClusters(ctx, &eks.ListClustersInput{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(list.Clusters, []string{emu.ClusterName()}) {
		t.Errorf("ListClusters = %v", list.Clusters)
	}
	_, err = c.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("nope")})
	var notFound *ekstypes.ResourceNotFoundException
	requireAPIError(t, err, "ResourceNotFoundException")
	if !errors.As(err, &notFound) {
		t.Errorf("the SDK did not decode ResourceNotFoundException as its type: %T", err)
	}
}

// gpuGroupInput is a valid CreateNodegroup input for a GPU group.
func gpuGroupInput(name, instanceType, amiType string, minSize, desired, maxSize int32) *eks.CreateNodegroupInput {
	return &eks.CreateNodegroupInput{
		ClusterName:        aws.String(emu.ClusterName()),
		NodegroupName:      aws.String(name),
		NodeRole:           aws.String(testNodeRole),
		Subnets:            testSubnetIDs,
		InstanceTypes:      []string{instanceType},
		AmiType:            ekstypes.AMITypes(amiType),
		ScalingConfig:      &ekstypes.NodegroupScalingConfig{MinSize: aws.Int32(minSize), DesiredSize: aws.Int32(desired), MaxSize: aws.Int32(maxSize)},
		ClientRequestToken: aws.String("token-" + name),
	}
}

// waitNodegroupStatus polls DescribeNodegroup until the group has status.
func waitNodegroupStatus(t *testing.T, c clients, name string, status ekstypes.NodegroupStatus) *ekstypes.Nodegroup {
	t.Helper()
	var ng *ekstypes.Nodegroup
	eventually(t, fmt.Sprintf("node group %s to be %s", name, status), func() error {
		out, err := c.eks.DescribeNodegroup(context.Background(), &eks.DescribeNodegroupInput{ClusterName: aws.String(emu.ClusterName()), NodegroupName: aws.String(name)})
		if err != nil {
			return err
		}
		ng = out.Nodegroup
		if ng.Status != status {
			return fmt.Errorf("status %s", ng.Status)
		}
		return nil
	})
	return ng
}

// groupNodes are the Kubernetes nodes of a node group.
func groupNodes(t *testing.T, name string) []corev1.Node {
	t.Helper()
	list, err := cluster.Client().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{"eks.amazonaws.com/nodegroup": name}).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitGroupNodes waits until the group has n nodes, all Ready and
// schedulable, and returns them.
func waitGroupNodes(t *testing.T, name string, n int) []corev1.Node {
	t.Helper()
	var nodes []corev1.Node
	eventually(t, fmt.Sprintf("%d nodes of node group %s", n, name), func() error {
		nodes = groupNodes(t, name)
		if len(nodes) != n {
			return fmt.Errorf("%d nodes", len(nodes))
		}
		return nil
	})
	names := make([]string, len(nodes))
	for i, node := range nodes {
		names[i] = node.Name
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.WaitForNodesReady(ctx, names...); err != nil {
		t.Fatal(err)
	}
	return groupNodes(t, name)
}

func deleteGroupAtEnd(t *testing.T, name string) {
	t.Cleanup(func() { _ = emu.DeleteNodegroupOutOfBand(emu.ClusterName(), name) })
}

func TestNodegroupLifecycle(t *testing.T) {
	requireTestbed(t)
	ctx := context.Background()
	c := testClients()
	const name = "lifecycle"
	deleteGroupAtEnd(t, name)
	in := gpuGroupInput(name, "p5.48xlarge", "AL2023_x86_64_NVIDIA", 0, 2, 4)
	in.Labels = map[string]string{"team": "ml"}
	in.Taints = []ekstypes.Taint{{Key: aws.String("dedicated"), Value: aws.String("ml"), Effect: ekstypes.TaintEffectNoSchedule}}
	in.Tags = map[string]string{"owner": "tests"}
	created, err := c.eks.CreateNodegroup(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if created.Nodegroup.Status != ekstypes.NodegroupStatusCreating {
		t.Errorf("a new group is %s, want CREATING", created.Nodegroup.Status)
	}
	arn := aws.ToString(created.Nodegroup.NodegroupArn)

	// The same client request token is the same create.
	again, err := c.eks.CreateNodegroup(ctx, in)
	if err != nil {
		t.Fatalf("repeating the create with its token: %v", err)
	}
	if aws.ToString(again.Nodegroup.NodegroupArn) != arn {
		t.Errorf("a repeated create made another group: %s, %s", arn, aws.ToString(again.Nodegroup.NodegroupArn))
	}
	other := *in
	other.ClientRequestToken = aws.String("another-token")
	_, err = c.eks.CreateNodegroup(ctx, &other)
	requireAPIError(t, err, "ResourceInUseException")

	ng := waitNodegroupStatus(t, c, name, ekstypes.NodegroupStatusActive)
	if len(ng.Resources.AutoScalingGroups) != 1 || !strings.HasPrefix(aws.ToString(ng.Resources.AutoScalingGroups[0].Name), "eks-"+name+"-") {
		t.Fatalf("resources.autoScalingGroups = %+v", ng.Resources)
	}
	asgName := aws.ToString(ng.Resources.AutoScalingGroups[0].Name)

	nodes := waitGroupNodes(t, name, 2)
	for _, node := range nodes {
		l := node.Labels
		if l["eks.amazonaws.com/capacityType"] != "ON_DEMAND" || l[corev1.LabelInstanceTypeStable] != "p5.48xlarge" || l["team"] != "ml" {
			t.Errorf("node %s labels %v", node.Name, l)
		}
		if zone := l[corev1.LabelTopologyZone]; !slices.Contains([]string{"us-west-2a", "us-west-2b", "us-west-2c"}, zone) {
			t.Errorf("node %s is in %q; p5.48xlarge is offered in us-west-2a to c only", node.Name, zone)
		}
		if !strings.HasPrefix(node.Name, "ip-10-0-") || !strings.HasSuffix(node.Name, ".us-west-2.compute.internal") {
			t.Errorf("node name %s is not an EC2 private DNS name", node.Name)
		}
		if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != "dedicated" || node.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
			t.Errorf("node %s taints %v, want the group's only", node.Name, node.Spec.Taints)
		}
		if _, has := node.Status.Capacity[gpulabels.ResourceName]; has {
			t.Errorf("AL2023 node %s advertises GPUs before a device plugin runs", node.Name)
		}
		if node.Status.Capacity.Cpu().Value() != 192 {
			t.Errorf("node %s has %v CPUs, want p5.48xlarge's 192", node.Name, node.Status.Capacity.Cpu())
		}
	}
	groups, err := c.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{asgName}})
	if err != nil {
		t.Fatal(err)
	}
	if len(groups.AutoScalingGroups) != 1 || aws.ToInt32(groups.AutoScalingGroups[0].DesiredCapacity) != 2 || len(groups.AutoScalingGroups[0].Instances) != 2 {
		t.Fatalf("Auto Scaling group %s: %+v", asgName, groups.AutoScalingGroups)
	}

	// Scale up; a second update meanwhile is refused.
	scaleUp := &eks.UpdateNodegroupConfigInput{
		ClusterName: aws.String(emu.ClusterName()), NodegroupName: aws.String(name),
		ScalingConfig:      &ekstypes.NodegroupScalingConfig{MinSize: aws.Int32(0), DesiredSize: aws.Int32(3), MaxSize: aws.Int32(4)},
		ClientRequestToken: aws.String("scale-up-" + name),
	}
	up, err := c.eks.UpdateNodegroupConfig(ctx, scaleUp)
	if err != nil {
		t.Fatal(err)
	}
	// The same token is the same update, even while it runs.
	if again, err := c.eks.UpdateNodegroupConfig(ctx, scaleUp); err != nil || aws.ToString(again.Update.Id) != aws.ToString(up.Update.Id) {
		t.Errorf("repeating the update with its token: %v, update %v", err, again)
	}
	if up.Update.Status != ekstypes.UpdateStatusInProgress || up.Update.Type != ekstypes.UpdateTypeConfigUpdate {
		t.Errorf("update %+v", up.Update)
	}
	_, err = c.eks.UpdateNodegroupConfig(ctx, &eks.UpdateNodegroupConfigInput{
		ClusterName: aws.String(emu.ClusterName()), NodegroupName: aws.String(name),
		Labels: &ekstypes.UpdateLabelsPayload{AddOrUpdateLabels: map[string]string{"x": "y"}},
	})
	requireAPIError(t, err, "ResourceInUseException")
	waitUpdateSuccessful(t, c, name, aws.ToString(up.Update.Id))
	var newest string
	for _, node := range waitGroupNodes(t, name, 3) {
		if !slices.ContainsFunc(nodes, func(old corev1.Node) bool { return old.Name == node.Name }) {
			newest = node.Name
		}
	}

	// Labels and taints change on the nodes in place.
	relabel, err := c.eks.UpdateNodegroupConfig(ctx, &eks.UpdateNodegroupConfigInput{
		ClusterName: aws.String(emu.ClusterName()), NodegroupName: aws.String(name),
		Labels: &ekstypes.UpdateLabelsPayload{AddOrUpdateLabels: map[string]string{"tier": "gpu"}, RemoveLabels: []string{"team"}},
		Taints: &ekstypes.UpdateTaintsPayload{
			AddOrUpdateTaints: []ekstypes.Taint{{Key: aws.String("gpu"), Value: aws.String("h100"), Effect: ekstypes.TaintEffectNoExecute}},
			RemoveTaints:      []ekstypes.Taint{{Key: aws.String("dedicated"), Value: aws.String("ml"), Effect: ekstypes.TaintEffectNoSchedule}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	waitUpdateSuccessful(t, c, name, aws.ToString(relabel.Update.Id))
	eventually(t, "the nodes to carry the new labels and taints", func() error {
		for _, node := range groupNodes(t, name) {
			if node.Labels["tier"] != "gpu" || node.Labels["team"] != "" {
				return fmt.Errorf("node %s labels %v", node.Name, node.Labels)
			}
			if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != "gpu" || node.Spec.Taints[0].Effect != corev1.TaintEffectNoExecute {
				return fmt.Errorf("node %s taints %v", node.Name, node.Spec.Taints)
			}
		}
		return nil
	})

	// Scale down.
	down, err := c.eks.UpdateNodegroupConfig(ctx, &eks.UpdateNodegroupConfigInput{
		ClusterName: aws.String(emu.ClusterName()), NodegroupName: aws.String(name),
		ScalingConfig: &ekstypes.NodegroupScalingConfig{MinSize: aws.Int32(0), DesiredSize: aws.Int32(1), MaxSize: aws.Int32(4)},
	})
	if err != nil {
		t.Fatal(err)
	}
	waitUpdateSuccessful(t, c, name, aws.ToString(down.Update.Id))
	if left := waitGroupNodes(t, name, 1); left[0].Name != newest {
		t.Errorf("scaling down kept %s, want the newest node %s (OldestInstance goes first)", left[0].Name, newest)
	}

	// A version update.
	vers, err := c.eks.UpdateNodegroupVersion(ctx, &eks.UpdateNodegroupVersionInput{
		ClusterName: aws.String(emu.ClusterName()), NodegroupName: aws.String(name), ReleaseVersion: aws.String("1.31.5-20250101"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if vers.Update.Type != ekstypes.UpdateTypeVersionUpdate {
		t.Errorf("version update type %s", vers.Update.Type)
	}
	waitUpdateSuccessful(t, c, name, aws.ToString(vers.Update.Id))
	ng = waitNodegroupStatus(t, c, name, ekstypes.NodegroupStatusActive)
	if aws.ToString(ng.ReleaseVersion) != "1.31.5-20250101" {
		t.Errorf("release version %s after the update", aws.ToString(ng.ReleaseVersion))
	}

	// Tags.
	if _, err := c.eks.TagResource(ctx, &eks.TagResourceInput{ResourceArn: aws.String(arn), Tags: map[string]string{"env": "test"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.eks.UntagResource(ctx, &eks.UntagResourceInput{ResourceArn: aws.String(arn), TagKeys: []string{"owner"}}); err != nil {
		t.Fatal(err)
	}
	tags, err := c.eks.ListTagsForResource(ctx, &eks.ListTagsForResourceInput{ResourceArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if len(tags.Tags) != 1 || tags.Tags["env"] != "test" {
		t.Errorf("tags %v, want env=test only", tags.Tags)
	}
	list, err := c.eks.ListNodegroups(ctx, &eks.ListNodegroupsInput{ClusterName: aws.String(emu.ClusterName())})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(list.Nodegroups, name) {
		t.Errorf("ListNodegroups %v lacks %s", list.Nodegroups, name)
	}

	// Delete: DELETING, then gone with its nodes.
	deleted, err := c.eks.DeleteNodegroup(ctx, &eks.DeleteNodegroupInput{ClusterName: aws.String(emu.ClusterName()), NodegroupName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if deleted.Nodegroup.Status != ekstypes.NodegroupStatusDeleting {
		t.Errorf("a deleted group is %s, want DELETING", deleted.Nodegroup.Status)
	}
	eventually(t, "the group to be gone", func() error {
		_, err := c.eks.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String(emu.ClusterName()), NodegroupName: aws.String(name)})
		if err == nil {
			return fmt.Errorf("still there")
		}
		var notFound *ekstypes.ResourceNotFoundException
		if !errors.As(err, &notFound) {
			t.Fatalf("describing a deleted group: %v", err)
		}
		if aws.ToString(notFound.NodegroupName) != name || aws.ToString(notFound.ClusterName) != emu.ClusterName() {
			t.Errorf("ResourceNotFoundException names %q of %q", aws.ToString(notFound.NodegroupName), aws.ToString(notFound.ClusterName))
		}
		return nil
	})
	waitGroupNodes(t, name, 0)
	if emu.AutoScalingGroupTags(asgName) != nil {
		t.Errorf("the Auto Scaling group %s outlived its node group", asgName)
	}
}

func waitUpdateSuccessful(t *testing.T, c clients, name, id string) {
	t.Helper()
	eventually(t, "update "+id, func() error {
		out, err := c.eks.DescribeUpdate(context.Background(), &eks.DescribeUpdateInput{
			Name: aws.String(emu.ClusterName()), NodegroupName: aws.String(name), UpdateId: aws.String(id),
		})
		if err != nil {
			return err
		}
		if out.Update.Status != ekstypes.UpdateStatusSuccessful {
			return fmt.Errorf("update %s", out.Update.Status)
		}
		return nil
	})
}

func TestCreateNodegroupRejectsWhatEKSRejects(t *testing.T) {
	requireTestbed(t)
	c := testClients()
	for _, tc := range []struct {
		description string
		change      func(in *eks.CreateNodegroupInput)
	}{
		{"min greater than max", func(in *eks.CreateNodegroupInput) {
			in.ScalingConfig = &ekstypes.NodegroupScalingConfig{MinSize: aws.Int32(3), DesiredSize: aws.Int32(3), MaxSize: aws.Int32(2)}
		}},
		{"desired above max", func(in *eks.CreateNodegroupInput) {
			in.ScalingConfig = &ekstypes.NodegroupScalingConfig{MinSize: aws.Int32(0), DesiredSize: aws.Int32(5), MaxSize: aws.Int32(2)}
		}},
		{"desired below min", func(in *eks.CreateNodegroupInput) {
			in.ScalingConfig = &ekstypes.NodegroupScalingConfig{MinSize: aws.Int32(2), DesiredSize: aws.Int32(1), MaxSize: aws.Int32(3)}
		}},
		{"an unknown instance type", func(in *eks.CreateNodegroupInput) { in.InstanceTypes = []string{"p9.huge"} }},
		{"an arm64 type with an x86_64 AMI type", func(in *eks.CreateNodegroupInput) { in.InstanceTypes = []string{"g5g.xlarge"} }},
		{"a label key over 63 characters", func(in *eks.CreateNodegroupInput) {
			in.Labels = map[string]string{strings.Repeat("k", 64): "v"}
		}},
		{"51 taints", func(in *eks.CreateNodegroupInput) {
			for i := range 51 {
				in.Taints = append(in.Taints, ekstypes.Taint{Key: aws.String(fmt.Sprintf("t%d", i)), Effect: ekstypes.TaintEffectNoSchedule})
			}
		}},
		{"a disk size with a launch template", func(in *eks.CreateNodegroupInput) {
			in.LaunchTemplate = &ekstypes.LaunchTemplateSpecification{Name: aws.String("gpu"), Version: aws.String("1")}
			in.DiskSize = aws.Int32(100)
		}},
		{"a CUSTOM AMI without a launch template", func(in *eks.CreateNodegroupInput) { in.AmiType = ekstypes.AMITypesCustom }},
		{"an unknown subnet", func(in *eks.CreateNodegroupInput) { in.Subnets = []string{"subnet-00000000000000000"} }},
		{"a node role that is no role ARN", func(in *eks.CreateNodegroupInput) { in.NodeRole = aws.String("gpu-nodes") }},
		{"both update config fields", func(in *eks.CreateNodegroupInput) {
			in.UpdateConfig = &ekstypes.NodegroupUpdateConfig{MaxUnavailable: aws.Int32(1), MaxUnavailablePercentage: aws.Int32(10)}
		}},
	} {
		t.Run(tc.description, func(t *testing.T) {
			in := gpuGroupInput("rejected", "g5.xlarge", "AL2023_x86_64_NVIDIA", 0, 1, 2)
			tc.change(in)
			_, err := c.eks.CreateNodegroup(context.Background(), in)
			requireAPIError(t, err, "InvalidParameterException")
		})
	}
	_, err := c.eks.DescribeNodegroup(context.Background(), &eks.DescribeNodegroupInput{ClusterName: aws.String(emu.ClusterName()), NodegroupName: aws.String("rejected")})
	requireAPIError(t, err, "ResourceNotFoundException")
}

func TestFailNextNodegroupCreateReportsTheHealthIssue(t *testing.T) {
	requireTestbed(t)
	c := testClients()
	const name = "failing"
	deleteGroupAtEnd(t, name)
	emu.FailNextNodegroupCreate("AsgInstanceLaunchFailures", "Could not launch On-Demand Instances. InsufficientInstanceCapacity")
	if _, err := c.eks.CreateNodegroup(context.Background(), gpuGroupInput(name, "p5.48xlarge", "AL2023_x86_64_NVIDIA", 0, 1, 1)); err != nil {
		t.Fatal(err)
	}
	ng := waitNodegroupStatus(t, c, name, ekstypes.NodegroupStatusCreateFailed)
	if ng.Health == nil || len(ng.Health.Issues) != 1 {
		t.Fatalf("health %+v", ng.Health)
	}
	issue := ng.Health.Issues[0]
	if issue.Code != "AsgInstanceLaunchFailures" || !strings.Contains(aws.ToString(issue.Message), "InsufficientInstanceCapacity") ||
		len(issue.ResourceIds) != 1 || issue.ResourceIds[0] != aws.ToString(ng.Resources.AutoScalingGroups[0].Name) {
		t.Errorf("health issue %+v", issue)
	}
	if nodes := groupNodes(t, name); len(nodes) != 0 {
		t.Errorf("a failed group registered %d nodes", len(nodes))
	}
	// A failed group can be deleted.
	if _, err := c.eks.DeleteNodegroup(context.Background(), &eks.DeleteNodegroupInput{ClusterName: aws.String(emu.ClusterName()), NodegroupName: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
}

func TestBottlerocketNVIDIANodesAdvertiseGPUsAtOnce(t *testing.T) {
	requireTestbed(t)
	c := testClients()
	const name = "bottlerocket"
	deleteGroupAtEnd(t, name)
	if _, err := c.eks.CreateNodegroup(context.Background(), gpuGroupInput(name, "g5.12xlarge", "BOTTLEROCKET_x86_64_NVIDIA", 1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	nodes := waitGroupNodes(t, name, 1)
	gpus := nodes[0].Status.Capacity[gpulabels.ResourceName]
	if gpus.Value() != 4 {
		t.Errorf("a Bottlerocket NVIDIA g5.12xlarge node has %v nvidia.com/gpu, want 4", gpus.String())
	}
}

func TestOutOfBandDeleteRemovesGroupAndNodes(t *testing.T) {
	requireTestbed(t)
	c := testClients()
	const name = "console-deleted"
	deleteGroupAtEnd(t, name)
	if _, err := c.eks.CreateNodegroup(context.Background(), gpuGroupInput(name, "g6.xlarge", "AL2023_x86_64_NVIDIA", 1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	waitGroupNodes(t, name, 1)
	if err := emu.DeleteNodegroupOutOfBand(emu.ClusterName(), name); err != nil {
		t.Fatal(err)
	}
	_, err := c.eks.DescribeNodegroup(context.Background(), &eks.DescribeNodegroupInput{ClusterName: aws.String(emu.ClusterName()), NodegroupName: aws.String(name)})
	requireAPIError(t, err, "ResourceNotFoundException")
	waitGroupNodes(t, name, 0)
}

func TestLaunchTemplateGroupTakesANewTemplateVersion(t *testing.T) {
	requireTestbed(t)
	ctx := context.Background()
	c := testClients()
	const name = "templated"
	deleteGroupAtEnd(t, name)
	in := gpuGroupInput(name, "g6e.xlarge", "CUSTOM", 0, 1, 1)
	in.LaunchTemplate = &ekstypes.LaunchTemplateSpecification{Name: aws.String("gpu-nodes"), Version: aws.String("1")}
	created, err := c.eks.CreateNodegroup(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if created.Nodegroup.DiskSize != nil {
		t.Errorf("a group with a launch template reports diskSize %d; its template sets it", aws.ToInt32(created.Nodegroup.DiskSize))
	}
	waitNodegroupStatus(t, c, name, ekstypes.NodegroupStatusActive)
	if node := waitGroupNodes(t, name, 1)[0]; node.Labels["eks.amazonaws.com/nodegroup-image"] != "" {
		t.Errorf("a CUSTOM AMI node claims an EKS image: %v", node.Labels)
	}
	update, err := c.eks.UpdateNodegroupVersion(ctx, &eks.UpdateNodegroupVersionInput{
		ClusterName: aws.String(emu.ClusterName()), NodegroupName: aws.String(name),
		LaunchTemplate: &ekstypes.LaunchTemplateSpecification{Name: aws.String("gpu-nodes"), Version: aws.String("2")},
	})
	if err != nil {
		t.Fatal(err)
	}
	waitUpdateSuccessful(t, c, name, aws.ToString(update.Update.Id))
	ng := waitNodegroupStatus(t, c, name, ekstypes.NodegroupStatusActive)
	if lt := ng.LaunchTemplate; lt == nil || aws.ToString(lt.Version) != "2" || aws.ToString(lt.Name) != "gpu-nodes" || !strings.HasPrefix(aws.ToString(lt.Id), "lt-0") {
		t.Errorf("launch template after the update: %+v", lt)
	}
}
