package eks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// A failed update ends UpdateNodeGroup with the update's errors. The
// emulator cannot fail an update, so an EKS endpoint of the test's answers
// UpdateNodegroupConfig and then DescribeUpdate, as EKS's REST JSON does.
func TestNodeGroupUpdateFailedReportsTheUpdatesErrors(t *testing.T) {
	var describes atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/clusters/prod/node-groups/gpu/update-config":
			_, _ = w.Write([]byte(`{"update":{"id":"9a1b","status":"InProgress","type":"ConfigUpdate"}}`))
		case r.Method == http.MethodGet && r.URL.Path == "/clusters/prod/updates/9a1b" && r.URL.Query().Get("nodegroupName") == "gpu":
			if describes.Add(1) == 1 {
				_, _ = w.Write([]byte(`{"update":{"id":"9a1b","status":"InProgress","type":"ConfigUpdate"}}`))
				return
			}
			_, _ = w.Write([]byte(`{"update":{"id":"9a1b","status":"Failed","type":"ConfigUpdate","errors":[` +
				`{"errorCode":"NodeCreationFailure","errorMessage":"Instances failed to join the kubernetes cluster","resourceIds":["i-0a","i-0b"]}]}}`))
		default:
			w.Header().Set("X-Amzn-Errortype", "InvalidRequestException")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"message":"unexpected ` + r.Method + " " + strings.ReplaceAll(r.URL.String(), `"`, "") + `"}`))
		}
	}))
	defer server.Close()

	c := testClient(t, Settings{Region: "us-west-2", Endpoints: Endpoints{EKS: server.URL}})
	prior := NodeGroupSpec{ClusterName: "prod", Name: "gpu", Scaling: Scaling{Min: 0, Max: 2, Desired: 1}}
	planned := prior
	planned.Scaling.Desired = 2
	_, err := c.UpdateNodeGroup(context.Background(), prior, planned)

	var failed *UpdateFailedError
	require.ErrorAs(t, err, &failed)
	require.Equal(t, "Failed", failed.Status)
	require.Equal(t, []Issue{{Code: "NodeCreationFailure", Message: "Instances failed to join the kubernetes cluster", ResourceIDs: []string{"i-0a", "i-0b"}}}, failed.Errors)
	require.ErrorContains(t, err, `EKS ConfigUpdate 9a1b of node group "gpu" (cluster "prod") ended Failed:`)
	require.Equal(t, int64(2), describes.Load(), "polled until the update ended")
}
