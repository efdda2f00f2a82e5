package kube

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// draDiscoveryServer answers /version with gitVersion and
// /apis/resource.k8s.io/v1 with resources (404 when nil), counting the
// discovery requests.
func draDiscoveryServer(t *testing.T, gitVersion string, resources []string) (*Cluster, *atomic.Int64) {
	t.Helper()
	var discoveries atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/version":
			_, _ = w.Write([]byte(`{"major":"1","gitVersion":"` + gitVersion + `"}`))
		case "/apis/resource.k8s.io/v1":
			discoveries.Add(1)
			if resources == nil {
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
				return
			}
			body := `{"kind":"APIResourceList","groupVersion":"resource.k8s.io/v1","resources":[`
			for i, name := range resources {
				if i > 0 {
					body += ","
				}
				body += `{"name":"` + name + `","namespaced":false,"kind":"X","verbs":["get"]}`
			}
			_, _ = w.Write([]byte(body + `]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := Connect(&rest.Config{Host: srv.URL}, ClusterOptions{})
	require.NoError(t, err)
	return c, &discoveries
}

func TestRequireDRANamesTheVersionThatIsTooOld(t *testing.T) {
	c, _ := draDiscoveryServer(t, "v1.33.5", nil)
	err := c.RequireDRA(context.Background())
	var unavailable *DRAUnavailableError
	require.True(t, errors.As(err, &unavailable), "got %v", err)
	require.Equal(t, "v1.33.5", unavailable.ServerVersion)
	require.ElementsMatch(t, draResources, unavailable.Missing)
	require.ErrorContains(t, err, "Kubernetes v1.33.5")
	require.ErrorContains(t, err, "needs Kubernetes 1.34 or newer")
	require.NotContains(t, err.Error(), "404", "a raw status is not the message")
}

func TestRequireDRASaysWhenANewClusterHasTheAPITurnedOff(t *testing.T) {
	c, _ := draDiscoveryServer(t, "v1.36.3", []string{"deviceclasses", "resourceclaims"})
	err := c.RequireDRA(context.Background())
	var unavailable *DRAUnavailableError
	require.True(t, errors.As(err, &unavailable), "got %v", err)
	require.Equal(t, []string{"resourceclaimtemplates", "resourceslices"}, unavailable.Missing)
	require.ErrorContains(t, err, "runs Kubernetes v1.36.3 but does not serve resource.k8s.io/v1 (resourceclaimtemplates, resourceslices)")
}

func TestRequireDRAAsksOnceAndAcceptsAServingCluster(t *testing.T) {
	c, discoveries := draDiscoveryServer(t, "v1.37.2", draResources)
	require.NoError(t, c.RequireDRA(context.Background()))
	require.NoError(t, c.RequireDRA(context.Background()))
	require.EqualValues(t, 1, discoveries.Load(), "a definite answer is cached")
}

func TestRequireDRAOnTheTestbed(t *testing.T) {
	requireCluster(t)
	c, err := Connect(cluster.RESTConfig(), ClusterOptions{})
	require.NoError(t, err)
	require.NoError(t, c.RequireDRA(context.Background()), "the testbed's Kubernetes serves DRA by default")
}
