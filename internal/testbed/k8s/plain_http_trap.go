package k8s

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// PlainHTTPTrap stands where an API server would be, on plain HTTP, for
// tests that prove credentials never travel in cleartext. It counts the
// requests that reach it and those that carry credentials (an
// Authorization header, or a client certificate, which plain HTTP cannot
// carry), remembers the last Authorization header, and answers every
// request 401 as kube-apiserver does.
type PlainHTTPTrap struct {
	Server      *httptest.Server
	Requests    atomic.Int64
	Credentials atomic.Int64
	lastAuth    atomic.Value // string
}

// NewPlainHTTPTrap starts a trap that the test's end stops.
func NewPlainHTTPTrap(t testing.TB) *PlainHTTPTrap {
	trap := &PlainHTTPTrap{}
	trap.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trap.Requests.Add(1)
		auth := r.Header.Get("Authorization")
		if auth != "" || (r.TLS != nil && len(r.TLS.PeerCertificates) > 0) {
			trap.Credentials.Add(1)
			trap.lastAuth.Store(auth)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
	}))
	t.Cleanup(trap.Server.Close)
	return trap
}

// Authorization is the last Authorization header that arrived.
func (trap *PlainHTTPTrap) Authorization() string {
	auth, _ := trap.lastAuth.Load().(string)
	return auth
}
