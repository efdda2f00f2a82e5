package provider

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// answerDroppingProxy stands between the provider and the testbed's API
// server. It forwards every request, with the testbed's admin credentials;
// the first request that drop matches is carried out by the API server,
// but its answer never reaches the provider: the connection is cut
// instead, as when a network drops a response or a load balancer times
// out. It returns a provider block that reaches the cluster through it.
func answerDroppingProxy(t *testing.T, drop func(*http.Request) bool) (providerBlock string, dropped *atomic.Bool) {
	t.Helper()
	dropped = new(atomic.Bool)
	providerBlock = testbedProxy(t, func(upstream http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !drop(r) || !dropped.CompareAndSwap(false, true) {
				upstream.ServeHTTP(w, r)
				return
			}
			upstream.ServeHTTP(httptest.NewRecorder(), r)
			panic(http.ErrAbortHandler) // the connection closes with no answer
		})
	})
	return providerBlock, dropped
}

// testbedProxy serves handler, which forwards to the testbed's API server
// (with the testbed's admin credentials) what it passes to upstream, and
// returns a provider block that reaches the cluster through it.
func testbedProxy(t *testing.T, handler func(upstream http.Handler) http.Handler) (providerBlock string) {
	t.Helper()
	upstream, err := url.Parse(cluster.APIServerURL())
	require.NoError(t, err)
	admin := cluster.RESTConfig()
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(admin.CAData), "the testbed's CA")
	tlsConfig := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if len(admin.CertData) > 0 {
		pair, err := tls.X509KeyPair(admin.CertData, admin.KeyData)
		require.NoError(t, err)
		tlsConfig.Certificates = []tls.Certificate{pair}
	}
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	proxy.Transport = &http.Transport{TLSClientConfig: tlsConfig}
	director := proxy.Director
	proxy.Director = func(r *http.Request) {
		director(r)
		r.Header.Del("Authorization") // the admin's credentials replace the provider's
		if admin.BearerToken != "" {
			r.Header.Set("Authorization", "Bearer "+admin.BearerToken)
		}
	}
	srv := httptest.NewTLSServer(handler(proxy))
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
`, srv.URL, string(ca))
}
