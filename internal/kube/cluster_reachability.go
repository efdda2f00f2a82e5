package kube

// This file owns the API server's reachability. Every request a Cluster
// sends goes through reachabilityTransport, which logs it (method, path,
// status, duration; never a header) and tells the Cluster's reachability
// whether it got an answer. A wait run under Cluster.guardWait ends with an
// *UnreachableError once nothing has reached the API server for longer
// than ClusterOptions.UnreachableLimit, instead of retrying silently until
// its own timeout (which is two hours for a training Job).
//
// What counts as unreachable, exactly:
//
//   - A request that fails in the transport (connection refused or reset,
//     TLS handshake or i/o timeout, EOF, ...), unless the request's own
//     context had ended by then (a caller that gives up, or whose deadline
//     passes, says nothing about the API server), or unless it failed on
//     the connection's credentials or TLS settings (a certificate this
//     client cannot verify, a handshake the server refused): that is a
//     rejection, below.
//   - A request answered 502, 503 or 504: what a load balancer or proxy in
//     front of a dead API server answers, and what an API server that is
//     starting or shutting down answers. Any other status, 500 and 429
//     included, is an answer from an API server that is up.
//   - A request still waiting for its response headers (a black-holed host,
//     a connection that hangs), from the moment it was sent.
//
// A stretch of unreachability begins when the first such request after the
// last answered one was sent (no earlier than that answer), and ends with
// the next answer to any request. A failure older than maxRetryGap with
// nothing since belongs to no current stretch: nobody was asking, so
// nothing says the API server stayed down. Watches are followed up to
// their response headers only; a watch whose stream breaks later is
// re-established by its informer, and that request counts.
//
// A request refused for the connection's credentials or TLS settings (a
// 401, a certificate this client cannot verify, a handshake the server
// refused: see auth_transport.go) is no unreachability: something
// answered. It is a rejection, and a guarded wait ends with it (a
// *CredentialsError) as soon as one of its requests, or any other since
// the wait began, is rejected; where the credentials refresh themselves
// (an exec plugin, a token file, an auth provider) only after a second
// rejection in a row, since the first makes an exec plugin fetch new ones.
// Any other answer ends the run of rejections.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// maxRetryGap is the longest silence a stretch of unreachability may hold.
// While the API server fails them, a wait's informer retries with
// client-go's reflector backoff (at most 30 s, jittered up to twice that),
// so a longer silence means nobody was asking: a failure after it starts a
// new stretch instead of extending the old one. Without it, a single failed
// request early in an apply would make an API server restart during a
// later wait fail that wait at once.
const maxRetryGap = 2 * time.Minute

// UnreachableError is the cause of a guarded wait's context (see
// Cluster.guardWait) when no request has reached the API server for longer
// than the Cluster's UnreachableLimit. Its Error text reads, e.g.:
//
//	API server 10.0.0.1:6443 unreachable since 2026-11-23T10:04:05Z (5m0s): GET /api/v1/nodes: dial tcp 10.0.0.1:6443: connect: connection refused
type UnreachableError struct {
	// Host is the API server's host[:port], as the Cluster was configured.
	Host string
	// Since is when the stretch of unreachability began: when the first
	// request that got no answer was sent.
	Since time.Time
	// Until is when the wait gave up on the API server.
	Until time.Time
	// Last is the latest failure of the stretch, or, when no request has
	// failed yet, the request that has been waiting longest for an answer.
	Last error
}

// Error reads "API server <host> unreachable since <Since, UTC RFC 3339>
// (<Until-Since, to the second>): <Last>".
func (e *UnreachableError) Error() string {
	last := "no answer"
	if e.Last != nil {
		last = e.Last.Error()
	}
	return fmt.Sprintf("API server %s unreachable since %s (%s): %s",
		e.Host, e.Since.UTC().Format(time.RFC3339), e.Until.Sub(e.Since).Round(time.Second), last)
}

// Unwrap returns the last failure, so that errors.Is(err, syscall.ECONNREFUSED)
// and the like see through an UnreachableError.
func (e *UnreachableError) Unwrap() error { return e.Last }

// IsUnreachable reports whether err is, or wraps, an *UnreachableError: a
// wait ended because the API server could not be reached for longer than
// the Cluster's UnreachableLimit, not because its own timeout passed.
func IsUnreachable(err error) bool {
	var unreachable *UnreachableError
	return errors.As(err, &unreachable)
}

// guardCause returns the *UnreachableError or *CredentialsError that ended
// ctx (a context returned by Cluster.guardWait, or one derived from it), or
// nil when ctx has not ended or ended for another reason (its own
// deadline, its caller's cancellation). A wait calls it once its watch has
// returned:
//
//	ctx, cancel := c.guardWait(ctx)
//	defer cancel()
//	_, err := watchtools.UntilWithSync(ctx, ...)
//	if cause := guardCause(ctx); cause != nil {
//		return fmt.Errorf("waiting for Job %s: %w", name, cause)
//	}
//
// Asking after cancel is as good: a context keeps the first cause it ended
// with, and cancel's own is context.Canceled, which is neither.
func guardCause(ctx context.Context) error {
	var (
		unreachable *UnreachableError
		rejection   *CredentialsError
	)
	cause := context.Cause(ctx)
	switch {
	case errors.As(cause, &unreachable):
		return unreachable
	case errors.As(cause, &rejection):
		return rejection
	}
	return nil
}

// reachability follows one API server's reachability from the outcome of
// every request sent to it (see the file comment for what counts). It is
// safe for concurrent use; recording a request costs a mutex and a map
// entry.
type reachability struct {
	host  string
	limit time.Duration

	mu sync.Mutex
	// pending holds every request still waiting for its response headers.
	pending map[*pendingRequest]struct{}
	// lastAnswer is when the latest HTTP answer (not 502-504) arrived.
	lastAnswer time.Time
	// downSince is when the current stretch of failures began; zero when
	// no request has failed since lastAnswer.
	downSince time.Time
	// lastFailure and lastErr are the latest failure of that stretch.
	lastFailure time.Time
	lastErr     error

	// rejectionsToFail is how many rejections in a row end a guarded wait.
	rejectionsToFail int
	// rejectedInARow counts the rejections since the last accepted
	// request; rejection is the latest of them, and rejectedAt when the
	// run reached rejectionsToFail (zero before).
	rejectedInARow int
	rejection      *CredentialsError
	rejectedAt     time.Time
}

// pendingRequest is one request waiting for its response headers.
type pendingRequest struct {
	method, path string
	sent         time.Time
}

// newReachability follows the API server at host (a rest.Config's Host:
// a URL, or host[:port]); the waits it guards give up after limit of
// unreachability.
func newReachability(host string, limit time.Duration) *reachability {
	return &reachability{host: hostOf(host), limit: limit, pending: map[*pendingRequest]struct{}{}, rejectionsToFail: 1}
}

// hostOf returns the host[:port] of a rest.Config Host, which may lack a
// scheme; what does not parse is returned as it is.
func hostOf(configHost string) string {
	withScheme := configHost
	if !strings.Contains(configHost, "://") {
		withScheme = "https://" + configHost
	}
	u, err := url.Parse(withScheme)
	if err != nil || u.Host == "" {
		return configHost
	}
	return u.Host
}

// sent records a request sent at at, until answered, failed or abandoned
// reports its outcome.
func (r *reachability) sent(method, path string, at time.Time) *pendingRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	request := &pendingRequest{method: method, path: path, sent: at}
	r.pending[request] = struct{}{}
	return request
}

// answered records an HTTP answer to request at at: the API server is
// reachable, and any stretch of failures before at is over.
func (r *reachability) answered(request *pendingRequest, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, request)
	if at.After(r.lastAnswer) {
		r.lastAnswer = at
	}
	if r.lastFailure.After(at) {
		// A failure stamped later than this answer was recorded first:
		// its stretch stands, but begins no earlier than this answer.
		if r.downSince.Before(at) {
			r.downSince = at
		}
		return
	}
	r.downSince, r.lastFailure, r.lastErr = time.Time{}, time.Time{}, nil
}

// failed records that request got no answer, failing with err at at.
func (r *reachability) failed(request *pendingRequest, at time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, request)
	if !at.After(r.lastAnswer) {
		return // the API server answered since: this failure is history
	}
	start := request.sent
	if start.Before(r.lastAnswer) {
		start = r.lastAnswer
	}
	if r.downSince.IsZero() || at.Sub(r.lastFailure) > maxRetryGap || start.Before(r.downSince) {
		r.downSince = start
	}
	if at.After(r.lastFailure) {
		r.lastFailure, r.lastErr = at, err
	}
}

// abandoned forgets request: its own context ended before any answer, which
// tells nothing about the API server.
func (r *reachability) abandoned(request *pendingRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, request)
}

// rejected records that a request was refused for the connection's
// credentials or TLS settings at at. A nil r records nothing.
func (r *reachability) rejected(err *CredentialsError, at time.Time) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejectedInARow++
	r.rejection = err
	if r.rejectedInARow >= r.rejectionsToFail && r.rejectedAt.IsZero() {
		r.rejectedAt = at
	}
}

// accepted records a request that the API server answered, with anything
// but a 401 or 502-504: the run of rejections is over. A nil r records
// nothing.
func (r *reachability) accepted() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejectedInARow, r.rejection, r.rejectedAt = 0, nil, time.Time{}
}

// rejectedSince returns the latest rejection when a run of rejections long
// enough to end a wait has reached that length at or after start, and nil
// otherwise.
func (r *reachability) rejectedSince(start time.Time) *CredentialsError {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rejectedAt.IsZero() || r.rejectedAt.Before(start) {
		return nil
	}
	return r.rejection
}

// unreachable returns an *UnreachableError when, at now, the API server has
// been unreachable for longer than the limit, and nil otherwise.
func (r *reachability) unreachable(now time.Time) *UnreachableError {
	r.mu.Lock()
	defer r.mu.Unlock()
	var since time.Time
	var last error
	if !r.downSince.IsZero() && now.Sub(r.lastFailure) <= maxRetryGap {
		since, last = r.downSince, r.lastErr
	}
	// The oldest request still waiting that was sent after the last
	// answer: one sent before it waits on its connection, not on the API
	// server, which has answered since.
	var oldest *pendingRequest
	for request := range r.pending {
		if request.sent.After(r.lastAnswer) && (oldest == nil || request.sent.Before(oldest.sent)) {
			oldest = request
		}
	}
	if oldest != nil && (since.IsZero() || oldest.sent.Before(since)) {
		since = oldest.sent
		if last == nil {
			last = fmt.Errorf("%s %s: no response in %s", oldest.method, oldest.path, now.Sub(oldest.sent).Round(time.Second))
		}
	}
	if since.IsZero() || now.Sub(since) <= r.limit {
		return nil
	}
	return &UnreachableError{Host: r.host, Since: since, Until: now, Last: last}
}

// checkInterval is how often a guarded wait asks whether the API server is
// unreachable: a tenth of the limit, between 10 ms and 1 s.
func (r *reachability) checkInterval() time.Duration {
	return min(max(r.limit/10, 10*time.Millisecond), time.Second)
}

// guardWait returns a child of ctx that ends, with an *UnreachableError as
// its cause, once the API server has been unreachable for longer than the
// Cluster's UnreachableLimit (a stretch that began before the wait counts
// from its beginning), or with a *CredentialsError once requests have been
// rejected for the connection's credentials or TLS settings since the wait
// began (see the file comment). Every wait runs under it:
//
//	ctx, cancel := c.guardWait(ctx)
//	defer cancel()
//
// and, once its watch has returned an error, asks guardCause(ctx) (or
// errors.As on context.Cause(ctx)) whether that is why. A goroutine
// checks the API server's reachability until cancel is called or ctx ends;
// cancel returns once it has stopped. A Cluster without a reachability (a
// test's) returns context.WithCancel(ctx).
func (c *Cluster) guardWait(ctx context.Context) (context.Context, context.CancelFunc) {
	if c == nil || c.reach == nil {
		return context.WithCancel(ctx)
	}
	guarded, cancel := context.WithCancelCause(ctx)
	stopped := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(stopped)
		c.reach.enforceLimit(guarded, cancel, start)
	}()
	return guarded, func() {
		cancel(nil)
		<-stopped
	}
}

// enforceLimit ends ctx with a *CredentialsError once requests have been
// rejected since start, or with an *UnreachableError once the API server
// has been unreachable for longer than the limit; it returns then, or when
// ctx ends.
func (r *reachability) enforceLimit(ctx context.Context, cancel context.CancelCauseFunc, start time.Time) {
	ticker := time.NewTicker(r.checkInterval())
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if rejection := r.rejectedSince(start); rejection != nil {
				tflog.Warn(ctx, "Kubernetes API server rejected the connection's credentials or TLS settings: ending the wait", map[string]any{
					"host":  r.host,
					"error": rejection.Error(),
				})
				cancel(rejection)
				return
			}
			unreachable := r.unreachable(time.Now())
			if unreachable == nil {
				continue
			}
			tflog.Warn(ctx, "Kubernetes API server unreachable for longer than the limit: ending the wait", map[string]any{
				"host":  unreachable.Host,
				"since": unreachable.Since.UTC().Format(time.RFC3339),
				"limit": r.limit.String(),
				"error": fmt.Sprint(unreachable.Last),
			})
			cancel(unreachable)
			return
		}
	}
}

// wrapTransport is the Cluster's rest.Config WrapTransport: it wraps the
// credentials transport (auth_transport.go), which wraps the one that
// sends each request; client-go puts its authentication wrappers around
// both, so requests arrive with their Authorization header.
func (r *reachability) wrapTransport(next http.RoundTripper) http.RoundTripper {
	return &reachabilityTransport{next: next, reach: r}
}

// reachabilityTransport logs every request to the API server under the
// request's context (tflog: debug for an answer, warn for a failure) and
// reports its outcome to reach. It logs the method, the path with its query
// (a Kubernetes API URL carries no secret), the status and the duration,
// and nothing from the headers, which hold the bearer token.
type reachabilityTransport struct {
	next  http.RoundTripper
	reach *reachability
}

// RoundTrip sends req through the wrapped transport, logs it and records
// its outcome.
func (t *reachabilityTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	path := req.URL.RequestURI()
	start := time.Now()
	request := t.reach.sent(req.Method, path, start)
	resp, err := t.next.RoundTrip(req)
	end := time.Now()
	fields := map[string]any{
		"method":      req.Method,
		"path":        path,
		"duration_ms": end.Sub(start).Milliseconds(),
	}
	if isWatch(req.URL) {
		fields["watch"] = true
	}
	var rejection *CredentialsError
	switch {
	case err != nil && ctx.Err() != nil:
		t.reach.abandoned(request)
		fields["error"] = err.Error()
		tflog.Debug(ctx, "Kubernetes API request ended by its caller", fields)
	case errors.As(err, &rejection):
		if rejection.sent {
			t.reach.answered(request, end) // a TLS peer answered: reachable
		} else {
			t.reach.abandoned(request) // never sent: says nothing
		}
		fields["error"] = err.Error()
		tflog.Warn(ctx, "Kubernetes API request refused for the connection's credentials or TLS settings: waits end on it", fields)
	case err != nil:
		t.reach.failed(request, end, fmt.Errorf("%s %s: %w", req.Method, path, err))
		fields["error"] = err.Error()
		tflog.Warn(ctx, "Kubernetes API request failed to reach the API server (a wait retries it; other calls fail with it)", fields)
	case isUnavailableStatus(resp.StatusCode):
		t.reach.failed(request, end, fmt.Errorf("%s %s: HTTP %s", req.Method, path, resp.Status))
		fields["status"] = resp.StatusCode
		tflog.Warn(ctx, "Kubernetes API server unavailable (a wait retries the request; other calls fail with it)", fields)
	default:
		t.reach.answered(request, end)
		fields["status"] = resp.StatusCode
		tflog.Debug(ctx, "Kubernetes API request", fields)
	}
	return resp, err
}

// WrappedRoundTripper returns the transport t wraps, for client-go's
// utilities that look through wrappers (k8s.io/apimachinery/pkg/util/net).
func (t *reachabilityTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// isUnavailableStatus reports whether status says the API server is not
// there to answer: 502 and 504 from a proxy or load balancer in front of
// it, 503 from one of those or from an API server starting or shutting
// down.
func isUnavailableStatus(status int) bool {
	return status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
}

// isWatch reports whether u asks for a watch: ?watch=true (or 1), or the
// legacy /watch/ paths.
func isWatch(u *url.URL) bool {
	switch u.Query().Get("watch") {
	case "true", "1":
		return true
	}
	return strings.Contains(u.Path, "/watch/")
}
