package eks

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"
)

func TestNodeGroupFailedErrorListsEveryHealthIssue(t *testing.T) {
	err := fmt.Errorf("creating EKS node group (prod:gpu): %w", &NodeGroupFailedError{
		ClusterName: "prod", Name: "gpu", Status: "CREATE_FAILED",
		Health: []Issue{
			{Code: "AsgInstanceLaunchFailures", Message: "Could not launch On-Demand Instances. InsufficientInstanceCapacity", ResourceIDs: []string{"eks-gpu-1234"}},
			{Code: "NodeCreationFailure", Message: "Instances failed to join the kubernetes cluster", ResourceIDs: []string{"i-0a", "i-0b"}},
		},
	})
	var failed *NodeGroupFailedError
	require.ErrorAs(t, err, &failed)
	require.Equal(t, "CREATE_FAILED", failed.Status)
	require.ErrorContains(t, err, `EKS node group "gpu" of cluster "prod" is CREATE_FAILED:`)
	require.ErrorContains(t, err, "AsgInstanceLaunchFailures: Could not launch On-Demand Instances. InsufficientInstanceCapacity (resources: eks-gpu-1234)")
	require.ErrorContains(t, err, "NodeCreationFailure: Instances failed to join the kubernetes cluster (resources: i-0a, i-0b)")

	require.ErrorContains(t, &NodeGroupFailedError{ClusterName: "prod", Name: "gpu", Status: "DEGRADED"}, "is DEGRADED (EKS reported no health issue)")
}

func TestUpdateFailedErrorListsTheUpdatesErrors(t *testing.T) {
	err := error(&UpdateFailedError{
		ClusterName: "prod", Name: "gpu", UpdateID: "0f3c", Type: "VersionUpdate", Status: "Failed",
		Errors: []Issue{{Code: "PodEvictionFailure", Message: "Reached max retries while trying to evict pods from nodes", ResourceIDs: []string{"ip-10-0-1-2"}}},
	})
	var failed *UpdateFailedError
	require.True(t, errors.As(err, &failed))
	require.ErrorContains(t, err, `EKS VersionUpdate 0f3c of node group "gpu" (cluster "prod") ended Failed:`)
	require.ErrorContains(t, err, "PodEvictionFailure: Reached max retries while trying to evict pods from nodes (resources: ip-10-0-1-2)")
}

func TestNodeGroupGoneErrorNamesTheGroupAndNothingOfTerraform(t *testing.T) {
	err := fmt.Errorf("creating: %w", &NodeGroupGoneError{ClusterName: "prod", Name: "gpu", While: "waiting for it to become ACTIVE"})
	var gone *NodeGroupGoneError
	require.ErrorAs(t, err, &gone)
	require.EqualError(t, gone, "EKS node group (prod:gpu) disappeared while waiting for it to become ACTIVE")
}

func TestUnknownNamesErrorsNameEachAndTheFix(t *testing.T) {
	require.EqualError(t, &UnknownInstanceTypesError{Names: []string{"p5.48xlarg", "g9.xlarge"}, Region: "us-west-2"},
		`EC2 instance type(s) "p5.48xlarg", "g9.xlarge" do not exist in region us-west-2: check the spelling (e.g. "p5.48xlarge") and that the type is sold in this region`)
	require.EqualError(t, &UnknownSubnetsError{IDs: []string{"subnet-0bad"}, Region: "us-west-2"},
		`subnet(s) "subnet-0bad" do not exist in region us-west-2: use subnet IDs (subnet-...) of the cluster's VPC in this region`)
}

func TestAPIErrorCode(t *testing.T) {
	apiErr := &smithy.GenericAPIError{Code: "ResourceNotFoundException", Message: "No node group found for name: gpu."}
	require.Equal(t, "ResourceNotFoundException", apiErrorCode(fmt.Errorf("describing: %w", apiErr)))
	require.Empty(t, apiErrorCode(errors.New("dial tcp: connection refused")))
	require.Empty(t, apiErrorCode(nil))
}
