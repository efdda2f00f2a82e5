package awsemu

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// TestEmulatorProcessServesTheControlsOverHTTP starts the emulator as a
// process of its own (this test binary, calling Serve), as `gpu-testbed
// up` does, and drives it through the test controls, which then go over
// HTTP to /_testbed/.
func TestEmulatorProcessServesTheControlsOverHTTP(t *testing.T) {
	requireTestbed(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	remote := New(Options{ClusterName: "remote", Command: []string{"/bin/sh", "-c", serveEnv + `=1 exec "$0" "$@"`, self}})
	testbed.StartForTest(t, testbed.Options{Backends: []testbed.Backend{remote}})
	client := eks.NewFromConfig(sdkConfig(SecretAccessKey), func(o *eks.Options) { o.BaseEndpoint = aws.String(remote.EKSEndpoint()) })
	ctx := context.Background()

	remote.ResetCallCounts()
	remote.ThrottleNext(1)
	_, err = client.ListClusters(ctx, &eks.ListClustersInput{})
	requireAPIError(t, err, "ThrottlingException")
	list, err := client.ListClusters(ctx, &eks.ListClustersInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Clusters) != 1 || list.Clusters[0] != "remote" {
		t.Errorf("clusters %v", list.Clusters)
	}
	if got := remote.CallCounts()["eks:ListClusters"]; got != 1 {
		t.Errorf("the process counted %d ListClusters, want 1 (the throttled one is not answered)", got)
	}

	remote.SetActiveDelay(0)
	remote.FailNextNodegroupCreate("AsgInstanceLaunchFailures", "no capacity")
	in := gpuGroupInput("remote-group", "g5.xlarge", "AL2023_x86_64_NVIDIA", 0, 0, 1)
	in.ClusterName = aws.String("remote")
	created, err := client.CreateNodegroup(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the remote group to fail", func() error {
		out, err := client.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String("remote"), NodegroupName: aws.String("remote-group")})
		if err != nil {
			return err
		}
		if out.Nodegroup.Status != ekstypes.NodegroupStatusCreateFailed {
			return fmt.Errorf("status %s", out.Nodegroup.Status)
		}
		return nil
	})
	asgName := aws.ToString(created.Nodegroup.Resources.AutoScalingGroups[0].Name)
	if tags := remote.AutoScalingGroupTags(asgName); tags["eks:nodegroup-name"] != "remote-group" {
		t.Errorf("tags of %s over HTTP: %v", asgName, tags)
	}
	remote.SetRepairMinute(time.Second)
	if status, err := remote.NodeRepairStatus("remote", "remote-group"); err != nil || status.Paused != "" || len(status.Repairs) != 0 {
		t.Errorf("node repair status over HTTP: %+v, %v", status, err)
	}
	if _, err := remote.NodeRepairStatus("remote", "no-such-group"); err == nil {
		t.Error("the node repair status of a group that does not exist, over HTTP: no error")
	}
	if err := remote.DeleteNodegroupOutOfBand("remote", "remote-group"); err != nil {
		t.Fatal(err)
	}
	if err := remote.DeleteNodegroupOutOfBand("remote", "remote-group"); err == nil {
		t.Error("deleting a group that is gone succeeded over HTTP")
	}
	_, err = client.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String("remote"), NodegroupName: aws.String("remote-group")})
	requireAPIError(t, err, "ResourceNotFoundException")
}
