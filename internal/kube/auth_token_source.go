package kube

// This file holds the transport that gives each request a bearer token from
// a TokenSource (ConnectionSettings.TokenSource: e.g. an EKS token minted
// from AWS credentials), for clusters reached without a kubeconfig or CLI.
// It sits outside the credentials transport (auth_transport.go), so that
// transport still refuses the token over plain HTTP and explains a 401.

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// TokenSource gives bearer tokens for a cluster. Token is called for every
// request, so a source caches its token and mints a new one before the old
// one expires; it must be safe for concurrent use. A source may describe
// itself for error messages with a String method (fmt.Stringer), e.g.
// `EKS token for cluster "prod"`; a description never holds the token.
type TokenSource interface {
	Token(ctx context.Context) (token string, expiry time.Time, err error)
}

// describeTokenSource names where a source's tokens come from.
func describeTokenSource(s TokenSource) string {
	if d, ok := s.(fmt.Stringer); ok {
		return d.String()
	}
	return "a bearer token from the provider's token source"
}

// tokenSourceTransport sets the Authorization header of each request to a
// bearer token from source.
type tokenSourceTransport struct {
	next   http.RoundTripper
	source TokenSource
	origin origin
	// reach hears of tokens that could not be had; nil in tests.
	reach *reachability
}

// RoundTrip sends a copy of req that carries a bearer token from the source.
// A source that fails ends the request with a *CredentialsError, which
// ends waits at once: no API server answer would change it.
func (t *tokenSourceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	token, _, err := t.source.Token(req.Context())
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, also on errors
		}
		if req.Context().Err() != nil {
			return nil, err
		}
		failed := &CredentialsError{
			Server:  serverOf(req.URL),
			Problem: "could not get a bearer token for the Kubernetes API server " + serverOf(req.URL),
			InUse:   t.origin.credentials.use,
			Fix:     "Fix " + t.origin.credentials.fix,
			Err:     err,
		}
		t.reach.rejected(failed, time.Now())
		return nil, failed
	}
	req = req.Clone(req.Context()) // a RoundTripper leaves its request as it was
	req.Header.Set("Authorization", "Bearer "+token)
	return t.next.RoundTrip(req)
}

// WrappedRoundTripper returns the transport t wraps, for client-go's
// utilities that look through wrappers (k8s.io/apimachinery/pkg/util/net).
func (t *tokenSourceTransport) WrappedRoundTripper() http.RoundTripper { return t.next }
