package kube

// This file holds the innermost wrapper of a Cluster's transport, between
// client-go's authentication wrappers (which set the Authorization header,
// run exec plugins and add a refreshed token on every request, redirects
// included) and the network. It is the one place that:
//
//   - refuses to send a request that carries credentials over plain HTTP,
//     unless the connection opted in (kubernetes.allow_plaintext_credentials):
//     nothing is written to the connection, whichever setting, environment
//     variable, kubeconfig or redirect put the credentials or the http:// URL
//     there;
//   - explains a TLS or certificate failure (auth_errors.go) with the
//     settings in use, wrapping the original error;
//   - rewrites the API server's 401 Status so that its message names the
//     credentials in use and the setting to fix (the status code and reason
//     stay, so apierrors.IsUnauthorized and exec plugins' refresh on 401
//     work as before), and adds to a 403 of a connection without
//     credentials that it has none, and which setting would give it some;
//   - tells the Cluster's reachability about rejections, which end waits at
//     once instead of being retried as an unreachable API server.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

// credentialsTransport is the innermost wrapper of a Cluster's transport.
type credentialsTransport struct {
	next           http.RoundTripper
	origin         origin
	allowPlaintext bool
	// reach hears of rejected and accepted requests; nil in tests.
	reach *reachability
}

// RoundTrip refuses plain-HTTP credentials, sends req, and explains a
// rejection of the connection's credentials or TLS settings.
func (t *credentialsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	server := serverOf(req.URL)
	if req.URL.Scheme == "http" && !t.allowPlaintext && req.Header.Get("Authorization") != "" {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, also on errors
		}
		return nil, plaintextCredentialsError(t.origin, server)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		if req.Context().Err() != nil {
			return nil, err // the caller gave up: says nothing of the credentials
		}
		if explained := tlsError(t.origin, server, err); explained != nil {
			t.reach.rejected(explained, time.Now())
			return nil, explained
		}
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		explained := unauthorizedError(t.origin, server)
		t.reach.rejected(explained, time.Now())
		return withStatus(resp, metav1.Status{Message: explained.Error(), Reason: metav1.StatusReasonUnauthorized}), nil
	}
	if !isUnavailableStatus(resp.StatusCode) {
		t.reach.accepted()
	}
	if resp.StatusCode == http.StatusForbidden && t.origin.kinds.none() {
		return t.anonymousForbidden(resp), nil
	}
	return resp, nil
}

// anonymousForbidden adds to a 403's message, which names the user
// system:anonymous, that the connection has no credentials and which
// setting would give it some. A body that is no Status is left alone.
func (t *credentialsTransport) anonymousForbidden(resp *http.Response) *http.Response {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return resp
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	status, ok := obj.(*metav1.Status)
	if err != nil || !ok {
		return resp
	}
	status.Message += "; the request carried no credentials, so the API server took it as system:anonymous; in use: " +
		t.origin.credentials.use + ". Set " + t.origin.credentials.fix
	if t.origin.alternative != "" {
		status.Message += "; " + t.origin.alternative
	}
	return withStatus(resp, *status)
}

// WrappedRoundTripper returns the transport t wraps, for client-go's
// utilities that look through wrappers (k8s.io/apimachinery/pkg/util/net).
func (t *credentialsTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// withStatus replaces resp's body (a 401 from the API server, whose
// message is only "Unauthorized", or a 403) with status as JSON, a failure
// of resp's code: client-go makes its message the request's error.
func withStatus(resp *http.Response, status metav1.Status) *http.Response {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	status.Status = metav1.StatusFailure
	status.Code = int32(resp.StatusCode)
	body, _ := json.Marshal(status)
	resp.Header = resp.Header.Clone()
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Del("Content-Encoding")
	resp.ContentLength = int64(len(body))
	resp.Uncompressed = false
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp
}
