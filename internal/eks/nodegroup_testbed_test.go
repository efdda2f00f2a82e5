package eks

// Node group lifecycle against the testbed's AWS emulator, through the SDK's
// real clients: create until ACTIVE (and the same create again is the same
// group), a failed create's health issues, updates waited through
// DescribeUpdate, throttling survived, and delete waited until gone.

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/stretchr/testify/require"
)

// testTimeout bounds each test's waits on the emulator, whose transitions
// take seconds.
const testTimeout = 3 * time.Minute

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// createForTest creates spec and deletes it when the test ends.
func createForTest(t *testing.T, c *Client, spec NodeGroupSpec) NodeGroup {
	t.Helper()
	ctx := testContext(t)
	g, err := c.CreateNodeGroup(ctx, spec, "token-"+spec.Name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := c.DeleteNodeGroup(ctx, spec.ClusterName, spec.Name); err != nil {
			t.Errorf("deleting node group %s: %v", spec.Name, err)
		}
	})
	require.NoError(t, err)
	return g
}

func TestNodeGroupCreateWaitsUntilActive(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	spec := gpuSpec(uniqueName("active"))
	g := createForTest(t, c, spec)

	require.Equal(t, "ACTIVE", g.Status)
	require.NotEmpty(t, g.ARN)
	require.NotEmpty(t, g.AutoScalingGroupNames)
	require.False(t, g.CreatedAt.IsZero())
	require.Equal(t, spec.Labels, g.Labels)
	require.Equal(t, spec.Taints, g.Taints)
	require.Equal(t, spec.Scaling, g.Scaling)
	require.Equal(t, spec.InstanceTypes, g.InstanceTypes)
	require.Equal(t, spec.AMIType, g.AMIType)
	require.Equal(t, "eks-test", g.Tags["owner"])

	read, found, err := c.ReadNodeGroup(ctx, spec.ClusterName, spec.Name)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, g.ARN, read.ARN)
}

func TestNodeGroupCreateRetriedWithTheSameTokenIsTheSameGroup(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	spec := gpuSpec(uniqueName("idempotent"))
	first := createForTest(t, c, spec)

	emu.ResetCallCounts()
	again, err := c.CreateNodeGroup(ctx, spec, "token-"+spec.Name)
	require.NoError(t, err, "a retried create (same client request token) is the create that succeeded")
	require.Equal(t, first.ARN, again.ARN)
	require.Equal(t, "ACTIVE", again.Status)
	require.Equal(t, 1, emu.CallCounts()["eks:CreateNodegroup"])
}

func TestNodeGroupCreateFailedReportsItsHealthIssues(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	spec := gpuSpec(uniqueName("failed"))
	const message = "Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have sufficient g5.xlarge capacity."
	emu.FailNextNodegroupCreate("AsgInstanceLaunchFailures", message)
	g, err := c.CreateNodeGroup(ctx, spec, "token-"+spec.Name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		require.NoError(t, c.DeleteNodeGroup(ctx, spec.ClusterName, spec.Name), "a failed node group can be deleted")
	})

	var failed *NodeGroupFailedError
	require.ErrorAs(t, err, &failed)
	require.Equal(t, "CREATE_FAILED", failed.Status)
	require.Len(t, failed.Health, 1)
	require.Equal(t, "AsgInstanceLaunchFailures", failed.Health[0].Code)
	require.Equal(t, message, failed.Health[0].Message)
	require.ErrorContains(t, err, "AsgInstanceLaunchFailures: "+message)
	require.Equal(t, "CREATE_FAILED", g.Status, "the group EKS accepted is returned, for state")
	require.NotEmpty(t, g.ARN)
}

func TestNodeGroupUpdateVersionThenConfig(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	prior := gpuSpec(uniqueName("update"))
	created := createForTest(t, c, prior)
	prior.ReleaseVersion, prior.Version = created.ReleaseVersion, created.Version

	planned := prior
	planned.ReleaseVersion = created.ReleaseVersion + "-next"
	planned.Scaling = Scaling{Min: 0, Max: 3, Desired: 2}
	planned.Labels = map[string]string{"team": "research", "tier": "gpu"}
	planned.Taints = []Taint{{Key: "dedicated", Value: "ml", Effect: "NO_EXECUTE"}}

	emu.ResetCallCounts()
	g, err := c.UpdateNodeGroup(ctx, prior, planned)
	require.NoError(t, err)
	calls := emu.CallCounts()
	require.Equal(t, 1, calls["eks:UpdateNodegroupVersion"])
	require.Equal(t, 1, calls["eks:UpdateNodegroupConfig"])
	require.Positive(t, calls["eks:DescribeUpdate"], "each update is waited through DescribeUpdate")
	require.Equal(t, "ACTIVE", g.Status)
	require.Equal(t, planned.ReleaseVersion, g.ReleaseVersion)
	require.Equal(t, planned.Scaling, g.Scaling)
	require.Equal(t, planned.Labels, g.Labels)
	require.Equal(t, planned.Taints, g.Taints)

	emu.ResetCallCounts()
	_, err = c.UpdateNodeGroup(ctx, planned, planned)
	require.NoError(t, err)
	require.Zero(t, emu.CallCounts()["eks:UpdateNodegroupVersion"]+emu.CallCounts()["eks:UpdateNodegroupConfig"], "nothing changed, nothing updated")
}

func TestNodeGroupUpdateTags(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	spec := gpuSpec(uniqueName("tags"))
	g := createForTest(t, c, spec)

	planned := spec
	planned.Tags = map[string]string{"cost-center": "42"}
	emu.ResetCallCounts()
	updated, err := c.UpdateNodeGroup(ctx, spec, planned)
	require.NoError(t, err)
	require.Equal(t, planned.Tags, updated.Tags)
	require.Zero(t, emu.CallCounts()["eks:UpdateNodegroupVersion"]+emu.CallCounts()["eks:UpdateNodegroupConfig"], "tags alone update no node group config")
	read, _, err := c.ReadNodeGroup(ctx, g.ClusterName, g.Name)
	require.NoError(t, err)
	require.Equal(t, "42", read.Tags["cost-center"])
	require.NotContains(t, read.Tags, "owner")
}

func TestThrottlingIsRetried(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	var attempts atomic.Int64
	c.eks = awseks.New(c.eks.Options(), func(o *awseks.Options) {
		o.HTTPClient = countingHTTPClient{next: o.HTTPClient, count: &attempts}
	})
	emu.ThrottleNext(3)
	_, found, err := c.ReadNodeGroup(ctx, emu.ClusterName(), "never-created")
	require.NoError(t, err, "three ThrottlingExceptions in a row are retried by the SDK")
	require.False(t, found)
	require.Equal(t, int64(4), attempts.Load(), "three throttled attempts and the one that got through")
}

// countingHTTPClient counts the requests the SDK sends, retries included.
type countingHTTPClient struct {
	next  awseks.HTTPClient
	count *atomic.Int64
}

func (c countingHTTPClient) Do(r *http.Request) (*http.Response, error) {
	c.count.Add(1)
	return c.next.Do(r)
}

func TestNodeGroupDeleteWaitsUntilGone(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	spec := gpuSpec(uniqueName("delete"))
	_, err := c.CreateNodeGroup(ctx, spec, "token-"+spec.Name)
	require.NoError(t, err)

	require.NoError(t, c.DeleteNodeGroup(ctx, spec.ClusterName, spec.Name))
	_, found, err := c.ReadNodeGroup(ctx, spec.ClusterName, spec.Name)
	require.NoError(t, err)
	require.False(t, found, "DeleteNodeGroup returns once EKS no longer knows the group")

	require.NoError(t, c.DeleteNodeGroup(ctx, spec.ClusterName, spec.Name), "deleting a group that is gone succeeds")
}

func TestNodeGroupDeleteWhileCreatingWaitsOutTheCreate(t *testing.T) {
	c := testbedClient(t)
	ctx := testContext(t)
	spec := gpuSpec(uniqueName("creating"))
	in := createNodegroupInput(spec)
	in.ClientRequestToken = aws.String("token-" + spec.Name)
	out, err := c.eks.CreateNodegroup(ctx, in)
	require.NoError(t, err)
	require.Equal(t, "CREATING", string(out.Nodegroup.Status))

	_, err = c.eks.DeleteNodegroup(ctx, &awseks.DeleteNodegroupInput{ClusterName: aws.String(spec.ClusterName), NodegroupName: aws.String(spec.Name)})
	require.Equal(t, "ResourceInUseException", apiErrorCode(err), "EKS refuses to delete a CREATING group: %v", err)

	require.NoError(t, c.DeleteNodeGroup(ctx, spec.ClusterName, spec.Name))
	_, found, err := c.ReadNodeGroup(ctx, spec.ClusterName, spec.Name)
	require.NoError(t, err)
	require.False(t, found)
}
