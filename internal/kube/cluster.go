package kube

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// DefaultUnreachableLimit is how long a wait keeps retrying while no request
// reaches the API server, when ClusterOptions leaves it unset: long enough
// for an API server to restart, short enough that a two-hour Job timeout
// does not become a two-hour hang.
const DefaultUnreachableLimit = 5 * time.Minute

// ClusterOptions configure Connect.
type ClusterOptions struct {
	// UserAgent names this client in the API server's logs and audit.
	UserAgent string
	// UnreachableLimit bounds how long a wait goes on while every request
	// to the API server fails to reach it; zero means DefaultUnreachableLimit.
	UnreachableLimit time.Duration
	// AllowPlaintextCredentials lets requests carry credentials to an
	// http:// API server (kubernetes.allow_plaintext_credentials). Without
	// it such a request fails with a *CredentialsError before anything is
	// sent.
	AllowPlaintextCredentials bool
	// tokens gives each request its bearer token (ConnectionSettings.TokenSource).
	tokens TokenSource
}

// Cluster is one Kubernetes cluster as this package talks to it: a
// client-go clientset whose every request is logged (method, path, status,
// duration; never headers), never carries credentials over plain HTTP
// unless allowed, fails with the settings to fix when the API server
// rejects the credentials or TLS fails (auth_transport.go), and whose
// reachability the waits watch. The provider holds a *Cluster and never a
// client-go type.
type Cluster struct {
	client kubernetes.Interface
	reach  *reachability
	// hub holds the informers the waits share (informers()).
	hubOnce sync.Once
	hub     *informerHub
	// refresh batches the reads of a refresh (ReadWorkload).
	refreshOnce sync.Once
	refresh     *refreshLists
	// dra caches whether the cluster serves DRA (RequireDRA).
	dra draSupport
}

// Connect builds a Cluster for cfg without contacting it. Its errors
// describe the settings in use from cfg alone; Connection.Connect, for
// settings resolved from the provider's block, names where each came from.
func Connect(cfg *rest.Config, opts ClusterOptions) (*Cluster, error) {
	return connect(cfg, opts, configOrigin(cfg))
}

// connect builds a Cluster for cfg, whose settings came from o. The
// clientset speaks protobuf to the API server (several times cheaper to
// decode than JSON for large node lists) and is not throttled client-side:
// the API server's priority and fairness does that.
func connect(cfg *rest.Config, opts ClusterOptions, o origin) (*Cluster, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	if cfg.QPS == 0 {
		cfg.QPS = 50
		cfg.Burst = 100
	}
	if opts.UserAgent != "" {
		cfg.UserAgent = opts.UserAgent
	}
	limit := opts.UnreachableLimit
	if limit <= 0 {
		limit = DefaultUnreachableLimit
	}
	reach := newReachability(cfg.Host, limit)
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.BearerTokenFile != "" {
		// Credentials that refresh themselves get a second chance: an exec
		// plugin fetches new ones on a 401.
		reach.rejectionsToFail = 2
	}
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return &credentialsTransport{next: next, origin: o, allowPlaintext: opts.AllowPlaintextCredentials, reach: reach}
	})
	if opts.tokens != nil {
		// Outside the credentials transport, which must see the token.
		cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
			return &tokenSourceTransport{next: next, source: opts.tokens, origin: o, reach: reach}
		})
	}
	cfg.Wrap(reach.wrapTransport)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		// The TLS configuration is built here: a CA or client key pair
		// that does not load fails now, before any request.
		return nil, fmt.Errorf("building Kubernetes client for %s: %w; in use: %s and %s: fix %s or %s",
			redactedHost(cfg.Host), err, o.credentials.use, o.ca.use, o.credentials.fix, o.ca.fix)
	}
	return &Cluster{client: cs, reach: reach}, nil
}
