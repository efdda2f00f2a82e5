package eks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConnectSendsTheUserAgentToTheEndpoint(t *testing.T) {
	var (
		mu     sync.Mutex
		agents []string
	)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents = append(agents, r.Header.Get("User-Agent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Errortype", "ResourceNotFoundException")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"No node group found for name: gpu."}`))
	}))
	defer server.Close()

	c := testClient(t, Settings{Region: "us-west-2", UserAgent: "terraform-provider-gpu/1.2.3", Endpoints: Endpoints{EKS: server.URL}})
	require.Equal(t, "us-west-2", c.Region())
	_, found, err := c.ReadNodeGroup(context.Background(), "prod", "gpu")
	require.NoError(t, err, "ResourceNotFoundException is not found, not an error")
	require.False(t, found)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, agents, 1, "the call went to the EKS endpoint of the settings")
	require.Contains(t, agents[0], "terraform-provider-gpu/1.2.3")
	require.Contains(t, agents[0], "aws-sdk-go-v2/")
}

func TestConnectNeedsARegion(t *testing.T) {
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	_, err := Settings{}.Connect(context.Background())
	require.ErrorIs(t, err, ErrNoRegion)
}
