package eks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// unansweredCreates is an EKS endpoint in front of the emulator's that
// hands CreateNodegroup to EKS, then loses EKS's answer (its HTTP status
// given to whileLost) and runs whileLost, as a Ctrl-C or a create timeout
// would end the caller's context while the answer is on its way;
// everything else goes through.
func unansweredCreates(t *testing.T, whileLost func(status int)) string {
	target, err := url.Parse(emu.EKSEndpoint())
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/clusters/"+emu.ClusterName()+"/node-groups" {
			proxy.ServeHTTP(w, r)
			return
		}
		answer := httptest.NewRecorder()
		proxy.ServeHTTP(answer, r)
		whileLost(answer.Code)
		<-r.Context().Done() // the answer never comes
	}))
	t.Cleanup(server.Close)
	return server.URL
}

func TestNodeGroupCreateCutShortWhileItsAnswerIsLostReturnsTheGroupEKSCreated(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx, cancel := context.WithCancel(testContext(t))
	c := testbedClient(t)
	created := false
	lossy, err := Settings{Endpoints: Endpoints{EKS: unansweredCreates(t, func(status int) {
		created = status == http.StatusOK
		cancel()
	})}}.Connect(ctx)
	require.NoError(t, err)
	spec := gpuSpec(uniqueName("unanswered"))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := c.DeleteNodeGroup(ctx, spec.ClusterName, spec.Name); err != nil {
			t.Errorf("deleting node group %s: %v", spec.Name, err)
		}
	})

	g, err := lossy.CreateNodeGroup(ctx, spec, "token-"+spec.Name)
	require.True(t, created, "EKS created the group")
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, spec.Name, g.Name, "the group EKS created comes back with the error, for the caller to keep: %v", err)
	require.NotEmpty(t, g.ARN)

	// A group of that name that was there before is never taken for one
	// this create made.
	otherCtx, otherCancel := context.WithCancel(testContext(t))
	refused := 0
	again, err := Settings{Endpoints: Endpoints{EKS: unansweredCreates(t, func(status int) {
		refused = status
		otherCancel()
	})}}.Connect(context.Background())
	require.NoError(t, err)
	other := spec
	other.NodeRoleARN = spec.NodeRoleARN + "-other"
	g, err = again.CreateNodeGroup(otherCtx, other, "token-other-"+spec.Name)
	require.Equal(t, http.StatusConflict, refused, "EKS refused a second group of the name (ResourceInUseException)")
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, g.Name, "another group of the same name is not this create's")
}
