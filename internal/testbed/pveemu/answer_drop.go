package pveemu

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
)

// AnswerDroppingProxy starts a loopback HTTPS proxy to the emulator for a
// test of a client whose request PVE carries out while the answer is lost
// on the way back: it forwards every request, and the first one drop
// matches it forwards, waits for the emulator's answer, and then closes
// the client's connection without it. It returns the proxy's API URL and
// the PEM of its (self-signed) certificate; the test's end stops it.
func (e *Emulator) AnswerDroppingProxy(t testing.TB, drop func(*http.Request) bool) (endpoint, certPEM string) {
	t.Helper()
	caPEM, err := os.ReadFile(e.caFile)
	if err != nil {
		t.Fatalf("reading the testbed CA: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("the testbed CA %s holds no certificate", e.caFile)
	}
	target := &url.URL{Scheme: "https", Host: "127.0.0.1:" + strconv.Itoa(e.port)}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	forward := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }, Transport: transport}
	var dropped atomic.Bool
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !drop(r) || !dropped.CompareAndSwap(false, true) {
			forward.ServeHTTP(w, r)
			return
		}
		out := r.Clone(r.Context())
		out.URL = &url.URL{Scheme: target.Scheme, Host: target.Host, Path: r.URL.Path, RawQuery: r.URL.RawQuery}
		out.Host, out.RequestURI = "", ""
		resp, err := transport.RoundTrip(out)
		if err != nil {
			t.Errorf("forwarding the request whose answer is dropped: %v", err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("dropping the answer: %v", err)
			return
		}
		_ = conn.Close()
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(transport.CloseIdleConnections)
	return srv.URL + "/api2/json", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}
