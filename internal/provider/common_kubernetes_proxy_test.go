package provider

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// answerDroppingProxy stands between the provider and the testbed's API
// server. It forwards every request, with the testbed's admin credentials;
// the first request that drop matches is carried out by the API server,
// but its answer never reaches the provider: the connection is cut
// instead, as when a network drops a response or a load balancer times
// out. It returns a provider block that reaches the cluster through it.
func answerDroppingProxy(t *testing.T, drop func(*http.Request) bool) (providerBlock string, dropped *atomic.Bool) {
	t.Helper()
	upstream, err := url.Parse(cluster.APIServerURL())
	require.NoError(t, err)
	transport, err := rest.TransportFor(cluster.RESTConfig())
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	proxy.Transport = transport
	director := proxy.Director
	proxy.Director = func(r *http.Request) {
		director(r)
		r.Header.Del("Authorization") // the transport authenticates
	}
	dropped = new(atomic.Bool)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !drop(r) || !dropped.CompareAndSwap(false, true) {
			proxy.ServeHTTP(w, r)
			return
		}
		proxy.ServeHTTP(httptest.NewRecorder(), r)
		panic(http.ErrAbortHandler) // the connection closes with no answer
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return fmt.Sprintf(`
provider "gpu" {
  kubernetes {
    host                   = %q
    cluster_ca_certificate = %q
    token                  = "stripped-by-the-proxy"
  }
}
`, srv.URL, string(ca)), dropped
}
