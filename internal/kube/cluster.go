package kube

import (
	"fmt"
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
}

// Cluster is one Kubernetes cluster as this package talks to it: a
// client-go clientset whose every request is logged (method, path, status,
// duration; never headers) and whose reachability the waits watch. The
// provider holds a *Cluster and never a client-go type.
type Cluster struct {
	client kubernetes.Interface
	reach  *reachability
}

// Connect builds a Cluster for cfg without contacting it. The clientset
// speaks protobuf to the API server (several times cheaper to decode than
// JSON for large node lists) and is not throttled client-side: the API
// server's priority and fairness does that.
func Connect(cfg *rest.Config, opts ClusterOptions) (*Cluster, error) {
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
	cfg.Wrap(reach.wrapTransport)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building Kubernetes client for %s: %w", cfg.Host, err)
	}
	return &Cluster{client: cs, reach: reach}, nil
}
