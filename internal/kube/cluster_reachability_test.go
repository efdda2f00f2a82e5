package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflogtest"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// These tests need no cluster: a fake API server on 127.0.0.1, reached
// through a TCP proxy the test can cut and restore, or a listener that
// accepts connections and never answers. They assert what happened in
// which order, never how fast: the margins are wide for a loaded machine.

// testBound bounds each test that waits for something to happen.
const testBound = 30 * time.Second

func TestReachabilityFromRequestOutcomes(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 4, 5, 0, time.UTC)
	const limit = time.Minute
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	refused := func(path string) error { return fmt.Errorf("GET %s: connection refused", path) }
	// answer, fail and hang record one request each.
	answer := func(r *reachability, sent, answered time.Duration) {
		r.answered(r.sent("GET", "/api/v1/nodes", at(sent)), at(answered))
	}
	fail := func(r *reachability, sent, failed time.Duration) {
		r.failed(r.sent("GET", "/api/v1/nodes", at(sent)), at(failed), refused("/api/v1/nodes"))
	}
	hang := func(r *reachability, sent time.Duration) {
		r.sent("GET", "/api/v1/nodes", at(sent))
	}

	tests := []struct {
		description string
		record      func(r *reachability)
		checkAt     time.Duration
		// wantSince is when the stretch began; nil: reachable.
		wantSince *time.Duration
		wantLast  string
	}{
		{
			description: "An API server that answers is reachable.",
			record:      func(r *reachability) { answer(r, 0, time.Second) },
			checkAt:     10 * time.Minute,
		},
		{
			description: "A failure is no unreachability until the limit has passed.",
			record:      func(r *reachability) { answer(r, 0, time.Second); fail(r, 10*time.Second, 10*time.Second) },
			checkAt:     10*time.Second + limit,
		},
		{
			description: "Failures for longer than the limit are unreachability since the first failed request was sent.",
			record: func(r *reachability) {
				answer(r, 0, time.Second)
				fail(r, 10*time.Second, 11*time.Second)
				r.failed(r.sent("GET", "/apis/batch/v1/jobs", at(40*time.Second)), at(40*time.Second), refused("/apis/batch/v1/jobs"))
			},
			checkAt:   71 * time.Second,
			wantSince: ptr.To(10 * time.Second),
			wantLast:  "GET /apis/batch/v1/jobs: connection refused",
		},
		{
			description: "An answer ends the stretch.",
			record: func(r *reachability) {
				fail(r, 10*time.Second, 10*time.Second)
				fail(r, 40*time.Second, 40*time.Second)
				answer(r, 50*time.Second, 50*time.Second)
			},
			checkAt: 2 * time.Minute,
		},
		{
			description: "A request waiting longer than the limit for its headers is unreachability since it was sent.",
			record:      func(r *reachability) { answer(r, 0, time.Second); hang(r, 5*time.Second) },
			checkAt:     66 * time.Second,
			wantSince:   ptr.To(5 * time.Second),
			wantLast:    "GET /api/v1/nodes: no response in 1m1s",
		},
		{
			description: "A request waiting since before the last answer waits on its connection, not on the API server.",
			record:      func(r *reachability) { hang(r, 5*time.Second); answer(r, 6*time.Second, 7*time.Second) },
			checkAt:     10 * time.Minute,
		},
		{
			description: "A request whose caller gave up counts for nothing.",
			record: func(r *reachability) {
				r.abandoned(r.sent("GET", "/api/v1/nodes", at(5*time.Second)))
			},
			checkAt: 2 * time.Minute,
		},
		{
			description: "A failure stamped before an answer recorded earlier counts for nothing.",
			record: func(r *reachability) {
				slow := r.sent("GET", "/api/v1/nodes", at(time.Second))
				answer(r, 2*time.Second, 5*time.Second)
				r.failed(slow, at(4*time.Second), refused("/api/v1/nodes"))
			},
			checkAt: 2 * time.Minute,
		},
		{
			description: "A failure stamped after an answer recorded later still counts, from that answer.",
			record: func(r *reachability) {
				fail(r, time.Second, 6*time.Second)
				answer(r, 2*time.Second, 5*time.Second)
			},
			checkAt:   66 * time.Second,
			wantSince: ptr.To(5 * time.Second),
			wantLast:  "GET /api/v1/nodes: connection refused",
		},
		{
			description: "A failure with nothing since for longer than maxRetryGap belongs to no current stretch.",
			record:      func(r *reachability) { fail(r, 10*time.Second, 10*time.Second) },
			checkAt:     10*time.Second + maxRetryGap + time.Second,
		},
		{
			description: "A failure after a silence longer than maxRetryGap starts a new stretch, not yet over the limit.",
			record: func(r *reachability) {
				fail(r, 10*time.Second, 10*time.Second)
				fail(r, 10*time.Second+maxRetryGap+time.Minute, 10*time.Second+maxRetryGap+time.Minute)
			},
			checkAt: 10*time.Second + maxRetryGap + time.Minute + limit/2,
		},
		{
			description: "A failure after a silence longer than maxRetryGap starts a new stretch, which counts from then.",
			record: func(r *reachability) {
				fail(r, 10*time.Second, 10*time.Second)
				fail(r, 10*time.Second+maxRetryGap+time.Minute, 10*time.Second+maxRetryGap+time.Minute)
			},
			checkAt:   10*time.Second + maxRetryGap + time.Minute + 2*limit,
			wantSince: ptr.To(10*time.Second + maxRetryGap + time.Minute),
			wantLast:  "GET /api/v1/nodes: connection refused",
		},
		{
			description: "A request still waiting keeps a stretch current however long ago its last failure was.",
			record: func(r *reachability) {
				fail(r, 10*time.Second, 10*time.Second)
				hang(r, 20*time.Second)
			},
			checkAt:   20*time.Second + maxRetryGap + time.Minute,
			wantSince: ptr.To(20 * time.Second),
			wantLast:  "GET /api/v1/nodes: no response in 3m0s",
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			r := newReachability("https://10.0.0.1:6443", limit)
			tc.record(r)
			got := r.unreachable(at(tc.checkAt))
			if tc.wantSince == nil {
				require.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			require.Equal(t, "10.0.0.1:6443", got.Host)
			require.Equal(t, at(*tc.wantSince), got.Since)
			require.Equal(t, at(tc.checkAt), got.Until)
			require.EqualError(t, got.Last, tc.wantLast)
		})
	}
}

func TestUnreachableErrorReadsHostSinceStretchAndLastError(t *testing.T) {
	since := time.Date(2026, 11, 23, 11, 4, 5, 0, time.FixedZone("CET", 3600))
	err := &UnreachableError{
		Host:  "10.0.0.1:6443",
		Since: since,
		Until: since.Add(3*time.Minute + 400*time.Millisecond),
		Last:  errors.New("GET /api/v1/nodes: dial tcp 10.0.0.1:6443: connect: connection refused"),
	}
	require.EqualError(t, err, "API server 10.0.0.1:6443 unreachable since 2026-11-23T10:04:05Z (3m0s): GET /api/v1/nodes: dial tcp 10.0.0.1:6443: connect: connection refused")
}

func TestUnreachableErrorIsFoundThroughWrapsAndContexts(t *testing.T) {
	last := errors.New("connection refused")
	unreachable := &UnreachableError{Host: "h", Last: last}

	require.True(t, IsUnreachable(unreachable))
	require.True(t, IsUnreachable(fmt.Errorf("waiting for Job default/train: %w", unreachable)))
	require.False(t, IsUnreachable(context.DeadlineExceeded))
	require.False(t, IsUnreachable(nil))
	require.ErrorIs(t, unreachable, last, "Unwrap gives the last error")

	fired, cancelFired := context.WithCancelCause(context.Background())
	child, cancelChild := context.WithTimeout(fired, time.Hour)
	defer cancelChild()
	require.NoError(t, guardCause(fired), "a context still running has no cause")
	cancelFired(unreachable)
	require.Same(t, unreachable, guardCause(fired))
	require.Same(t, unreachable, guardCause(child), "a context derived from a guarded one inherits its cause")
	cancelFired(nil)
	require.Same(t, unreachable, guardCause(fired), "a later cancel keeps the first cause")

	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, guardCause(canceled))
}

func TestReachabilityHostOfConfigHost(t *testing.T) {
	tests := []struct{ description, configHost, want string }{
		{"A URL gives its host and port.", "https://10.0.0.1:6443", "10.0.0.1:6443"},
		{"A URL with a path gives its host.", "https://api.example.com/k8s/clusters/c-1", "api.example.com"},
		{"A host:port without scheme stays as it is.", "10.0.0.1:6443", "10.0.0.1:6443"},
		{"A name:port without scheme stays as it is.", "localhost:6443", "localhost:6443"},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			require.Equal(t, tc.want, hostOf(tc.configHost))
		})
	}
}

func TestReachabilityGuardOfAReachableAPIServerDoesNotFire(t *testing.T) {
	t.Parallel()
	const limit = 2 * time.Second
	api := newFakeAPIServer(t)
	proxy := newCuttableProxy(t, api.addr())
	c := connectForTest(t, proxy.addr, limit, "")

	guarded, cancel := c.guardWait(context.Background())
	defer cancel()
	for start := time.Now(); time.Since(start) < 3*limit; {
		require.NoError(t, getConfigMap(context.Background(), c))
		require.NoError(t, guarded.Err())
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, guarded.Err())
}

func TestReachabilityGuardFiresOnceNothingAnswersForLongerThanTheLimit(t *testing.T) {
	t.Parallel()
	const limit = time.Second
	tests := []struct {
		description string
		breakIt     func(api *fakeAPIServer, proxy *cuttableProxy)
		wantLast    string
	}{
		{
			description: "The API server stops accepting connections.",
			breakIt:     func(_ *fakeAPIServer, proxy *cuttableProxy) { proxy.cut() },
			wantLast:    "connection refused",
		},
		{
			description: "A proxy in front of the API server answers 503.",
			breakIt:     func(api *fakeAPIServer, _ *cuttableProxy) { api.unavailable.Store(true) },
			wantLast:    "HTTP 503 Service Unavailable",
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPIServer(t)
			proxy := newCuttableProxy(t, api.addr())
			c := connectForTest(t, proxy.addr, limit, "")
			ctx, cancelTest := context.WithTimeout(context.Background(), testBound)
			defer cancelTest()
			require.NoError(t, getConfigMap(ctx, c))

			brokenAt := time.Now()
			tc.breakIt(api, proxy)
			require.Error(t, getConfigMap(ctx, c))
			// A wait that starts during the outage counts it from its start.
			guardedAt := time.Now()
			guarded, cancel := c.guardWait(ctx)
			defer cancel()
			for guarded.Err() == nil && ctx.Err() == nil {
				require.Error(t, getConfigMap(ctx, c))
				time.Sleep(20 * time.Millisecond)
			}
			require.NoError(t, ctx.Err(), "the guard fired within %s", testBound)

			cause := guardCause(guarded)
			require.Error(t, cause)
			require.True(t, IsUnreachable(cause))
			require.True(t, IsUnreachable(fmt.Errorf("waiting: %w", context.Cause(guarded))))
			var unreachable *UnreachableError
			require.ErrorAs(t, cause, &unreachable)
			require.Equal(t, proxy.addr, unreachable.Host)
			require.False(t, unreachable.Since.Before(brokenAt), "the stretch began after the outage did")
			require.True(t, unreachable.Since.Before(guardedAt), "the stretch began before the wait did")
			require.Greater(t, unreachable.Until.Sub(unreachable.Since), limit)
			require.ErrorContains(t, unreachable.Last, tc.wantLast)
			require.Regexp(t, `^API server `+regexp.QuoteMeta(proxy.addr)+` unreachable since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \((\d+m)?\d+s\): GET /api/v1/namespaces/default/configmaps/gpu-config: .*`+tc.wantLast, cause.Error())
		})
	}
}

func TestReachabilityGuardRidesOutAShortOutage(t *testing.T) {
	t.Parallel()
	const limit = 3 * time.Second
	api := newFakeAPIServer(t)
	proxy := newCuttableProxy(t, api.addr())
	c := connectForTest(t, proxy.addr, limit, "")
	ctx := context.Background()
	require.NoError(t, getConfigMap(ctx, c))

	guarded, cancel := c.guardWait(ctx)
	defer cancel()
	cutAt := time.Now()
	proxy.cut()
	require.ErrorContains(t, getConfigMap(ctx, c), "connection refused")
	proxy.restore()
	require.NoError(t, getConfigMap(ctx, c))
	require.Less(t, time.Since(cutAt), limit, "the outage was shorter than the limit")

	select {
	case <-guarded.Done():
		t.Fatalf("the guard fired after a short outage: %v", context.Cause(guarded))
	case <-time.After(3 * limit):
	}
}

func TestReachabilityGuardFiresWhileARequestHangsWithoutAnswer(t *testing.T) {
	t.Parallel()
	const limit = time.Second
	blackHole := newBlackHole(t)
	c := connectForTest(t, blackHole, limit, "")
	ctx, cancelTest := context.WithTimeout(context.Background(), testBound)
	defer cancelTest()

	guarded, cancel := c.guardWait(ctx)
	defer cancel()
	requestCtx, cancelRequest := context.WithCancel(ctx)
	defer cancelRequest()
	sentAfter := time.Now()
	requestDone := make(chan error, 1)
	go func() { requestDone <- getConfigMap(requestCtx, c) }()

	select {
	case <-guarded.Done():
	case err := <-requestDone:
		t.Fatalf("the request to a black hole returned: %v", err)
	case <-ctx.Done():
		t.Fatalf("the guard did not fire within %s", testBound)
	}
	var unreachable *UnreachableError
	require.ErrorAs(t, guardCause(guarded), &unreachable)
	require.Equal(t, blackHole, unreachable.Host)
	require.False(t, unreachable.Since.Before(sentAfter))
	require.ErrorContains(t, unreachable.Last, "GET /api/v1/namespaces/default/configmaps/gpu-config: no response in ")
	select {
	case err := <-requestDone:
		t.Fatalf("the request returned before its caller gave up: %v", err)
	default:
	}

	cancelRequest()
	require.ErrorIs(t, <-requestDone, context.Canceled)
}

func TestReachabilityIgnoresRequestsEndedByTheirCaller(t *testing.T) {
	t.Parallel()
	const limit = time.Second
	tests := []struct {
		description string
		target      func(t *testing.T) string
		// end ends the request started under ctx once it is pending.
		end             func(cancel context.CancelFunc)
		withDeadline    bool
		wantUnreachable bool
	}{
		{
			description: "A request its caller cancels counts for nothing.",
			target:      newBlackHole,
			end:         func(cancel context.CancelFunc) { cancel() },
		},
		{
			description:  "A request whose caller's deadline passes counts for nothing.",
			target:       newBlackHole,
			end:          func(context.CancelFunc) {},
			withDeadline: true,
		},
		{
			description:     "A request refused a connection counts, for contrast.",
			target:          closedPort,
			end:             func(context.CancelFunc) {},
			wantUnreachable: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			t.Parallel()
			c := connectForTest(t, tc.target(t), limit, "")
			ctx, cancel := context.WithTimeout(context.Background(), testBound)
			defer cancel()
			if tc.withDeadline {
				var cancelDeadline context.CancelFunc
				ctx, cancelDeadline = context.WithTimeout(ctx, 2*time.Second)
				defer cancelDeadline()
			}
			requestDone := make(chan error, 1)
			go func() { requestDone <- getConfigMap(ctx, c) }()
			if !tc.wantUnreachable {
				// Pending: unreachable, if it stays so past the limit.
				require.Eventually(t, func() bool { return c.reach.unreachable(time.Now().Add(2*limit)) != nil },
					testBound, 10*time.Millisecond)
			}
			tc.end(cancel)
			err := <-requestDone
			require.Error(t, err)

			got := c.reach.unreachable(time.Now().Add(2 * limit))
			if !tc.wantUnreachable {
				require.Nil(t, got, "after the request ended: %v", err)
				return
			}
			require.NotNil(t, got)
			require.ErrorContains(t, got, "connection refused")
		})
	}
}

func TestReachabilityGuardStopsItsGoroutine(t *testing.T) {
	// Not parallel: it counts the goroutines of every guard in the process.
	c := &Cluster{reach: newReachability("127.0.0.1:6443", time.Hour)}
	base := guardGoroutines()

	guarded, cancel := c.guardWait(context.Background())
	require.Equal(t, base+1, guardGoroutines())
	cancel()
	require.Equal(t, base, guardGoroutines(), "cancel returns once the goroutine has stopped")
	require.ErrorIs(t, guarded.Err(), context.Canceled)
	require.NoError(t, guardCause(guarded))

	parent, cancelParent := context.WithCancel(context.Background())
	_, cancel = c.guardWait(parent)
	defer cancel()
	require.Equal(t, base+1, guardGoroutines())
	cancelParent()
	require.Eventually(t, func() bool { return guardGoroutines() == base }, testBound, 10*time.Millisecond,
		"the goroutine stops when its parent context ends")

	unguarded, cancel := (&Cluster{}).guardWait(context.Background())
	require.Equal(t, base, guardGoroutines(), "a Cluster without reachability starts no goroutine")
	require.NoError(t, unguarded.Err())
	cancel()
	require.ErrorIs(t, unguarded.Err(), context.Canceled)
}

func TestReachabilityLogsEveryRequestWithoutHeaders(t *testing.T) {
	t.Parallel()
	api := newFakeAPIServer(t)
	proxy := newCuttableProxy(t, api.addr())
	c := connectForTest(t, proxy.addr, time.Minute, "s3cr3t")
	var out bytes.Buffer
	ctx := tflogtest.RootLogger(context.Background(), &out)
	configMaps := c.client.CoreV1().ConfigMaps(metav1.NamespaceDefault)

	_, err := configMaps.Get(ctx, "gpu-config", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = configMaps.Get(ctx, "missing", metav1.GetOptions{})
	require.ErrorContains(t, err, "not found")
	watcher, err := configMaps.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	watcher.Stop()
	proxy.cut()
	_, err = configMaps.Get(ctx, "gpu-config", metav1.GetOptions{})
	require.ErrorContains(t, err, "connection refused")
	require.Equal(t, "Bearer s3cr3t", api.authorization(), "the token went out with the requests")

	logged := out.String()
	require.NotContains(t, logged, "s3cr3t")
	entries, err := tflogtest.MultilineJSONDecode(strings.NewReader(logged))
	require.NoError(t, err)
	// The last Get may have been retried (a pooled connection that the cut
	// closed), so the failure is the last entry, not necessarily the 4th.
	require.GreaterOrEqual(t, len(entries), 4, logged)
	entries = append(entries[:3], entries[len(entries)-1])
	wants := []struct {
		level, message, path string
		status               float64 // 0: none
		watch                bool
		err                  string
	}{
		{"debug", "Kubernetes API request", "/api/v1/namespaces/default/configmaps/gpu-config", 200, false, ""},
		{"debug", "Kubernetes API request", "/api/v1/namespaces/default/configmaps/missing", 404, false, ""},
		{"debug", "Kubernetes API request", "/api/v1/namespaces/default/configmaps?watch=true", 200, true, ""},
		{"warn", "Kubernetes API request failed to reach the API server (a wait retries it; other calls fail with it)", "/api/v1/namespaces/default/configmaps/gpu-config", 0, false, "connection refused"},
	}
	for i, want := range wants {
		entry := entries[i]
		require.Equal(t, want.level, entry["@level"], "entry %d", i)
		require.Equal(t, want.message, entry["@message"], "entry %d", i)
		require.Equal(t, "GET", entry["method"], "entry %d", i)
		require.Equal(t, want.path, entry["path"], "entry %d", i)
		require.IsType(t, float64(0), entry["duration_ms"], "entry %d", i)
		if want.status != 0 {
			require.Equal(t, want.status, entry["status"], "entry %d", i)
		} else {
			require.NotContains(t, entry, "status", "entry %d", i)
		}
		if want.watch {
			require.Equal(t, true, entry["watch"], "entry %d", i)
		} else {
			require.NotContains(t, entry, "watch", "entry %d", i)
		}
		if want.err != "" {
			require.Contains(t, entry["error"], want.err, "entry %d", i)
		}
	}
}

// fakeAPIServer answers like a tiny API server: the ConfigMap default/
// gpu-config, an empty watch, a 404 Status for anything else; or 503 to
// everything while unavailable is set, as a load balancer in front of a
// dead API server does.
type fakeAPIServer struct {
	server      *httptest.Server
	unavailable atomic.Bool
	lastAuth    atomic.Value // string
}

func newFakeAPIServer(t *testing.T) *fakeAPIServer {
	api := &fakeAPIServer{}
	api.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		api.lastAuth.Store(req.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		switch {
		case api.unavailable.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `no healthy upstream`)
		case req.URL.Query().Get("watch") == "true":
			w.WriteHeader(http.StatusOK)
			_ = http.NewResponseController(w).Flush()
		case req.URL.Path == "/api/v1/namespaces/default/configmaps/gpu-config":
			_, _ = io.WriteString(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"gpu-config","namespace":"default"},"data":{"a":"b"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"not found","reason":"NotFound","code":404}`)
		}
	}))
	t.Cleanup(api.server.Close)
	return api
}

func (api *fakeAPIServer) addr() string { return api.server.Listener.Addr().String() }

// authorization is the Authorization header of the latest request.
func (api *fakeAPIServer) authorization() string {
	auth, _ := api.lastAuth.Load().(string)
	return auth
}

// cuttableProxy forwards TCP connections from addr to a backend until cut,
// which closes its listener and every connection, so that connecting is
// refused; restore listens on addr again.
type cuttableProxy struct {
	t       *testing.T
	addr    string
	backend string

	mu       sync.Mutex
	listener net.Listener // nil while cut
	conns    map[net.Conn]struct{}
	running  sync.WaitGroup
}

func newCuttableProxy(t *testing.T, backend string) *cuttableProxy {
	return newCuttableProxyOn(t, "127.0.0.1", backend)
}

// newCuttableProxyOn is newCuttableProxy listening on a free port of host.
func newCuttableProxyOn(t *testing.T, host, backend string) *cuttableProxy {
	listener, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	require.NoError(t, err)
	p := &cuttableProxy{t: t, addr: listener.Addr().String(), backend: backend, conns: map[net.Conn]struct{}{}}
	p.serve(listener)
	t.Cleanup(p.cut)
	return p
}

func (p *cuttableProxy) serve(listener net.Listener) {
	p.mu.Lock()
	p.listener = listener
	p.mu.Unlock()
	p.running.Add(1)
	go func() {
		defer p.running.Done()
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			p.running.Add(1)
			go func() {
				defer p.running.Done()
				p.forward(conn)
			}()
		}
	}()
}

// forward copies between conn and a new connection to the backend until
// either side or cut closes them.
func (p *cuttableProxy) forward(conn net.Conn) {
	backend, err := net.Dial("tcp", p.backend)
	if err != nil {
		_ = conn.Close()
		return
	}
	p.mu.Lock()
	if p.listener == nil { // cut meanwhile
		p.mu.Unlock()
		_ = conn.Close()
		_ = backend.Close()
		return
	}
	p.conns[conn], p.conns[backend] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(backend, conn); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, backend); done <- struct{}{} }()
	<-done
	_ = conn.Close()
	_ = backend.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, conn)
	delete(p.conns, backend)
	p.mu.Unlock()
}

// cut closes the listener and every connection, and returns once the
// proxy's goroutines have stopped.
func (p *cuttableProxy) cut() {
	p.mu.Lock()
	if p.listener != nil {
		_ = p.listener.Close()
		p.listener = nil
	}
	for conn := range p.conns {
		_ = conn.Close()
	}
	p.mu.Unlock()
	p.running.Wait()
}

// restore listens on the proxy's address again.
func (p *cuttableProxy) restore() {
	listener, err := net.Listen("tcp", p.addr)
	require.NoError(p.t, err)
	p.serve(listener)
}

// newBlackHole returns the address of a listener that accepts connections
// and never answers on them.
func newBlackHole(t *testing.T) string {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = listener.Close()
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		for _, conn := range conns {
			_ = conn.Close()
		}
	})
	return listener.Addr().String()
}

// closedPort returns an address on 127.0.0.1 where nothing listens.
func closedPort(t *testing.T) string {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := listener.Addr().String()
	require.NoError(t, listener.Close())
	return addr
}

// connectForTest connects to the plain-HTTP API server at addr, allowing
// the bearer token to go over plain HTTP.
func connectForTest(t *testing.T, addr string, limit time.Duration, bearerToken string) *Cluster {
	c, err := Connect(&rest.Config{Host: "http://" + addr, BearerToken: bearerToken}, ClusterOptions{UnreachableLimit: limit, AllowPlaintextCredentials: true})
	require.NoError(t, err)
	return c
}

// getConfigMap is one request to the API server.
func getConfigMap(ctx context.Context, c *Cluster) error {
	_, err := c.client.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "gpu-config", metav1.GetOptions{})
	return err
}

// guardGoroutines counts the goroutines of guardWait running in the process.
func guardGoroutines() int {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), ".(*Cluster).guardWait.func1(")
		}
		buf = make([]byte, 2*len(buf))
	}
}
