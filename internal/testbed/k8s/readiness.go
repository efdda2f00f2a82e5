package k8s

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// Backoff between readiness checks: quick at first (most things are ready
// within a second or two), never slower than pollMaxInterval.
const (
	pollFirstInterval = 20 * time.Millisecond
	pollMaxInterval   = 500 * time.Millisecond
)

// pollUntil calls done with growing pauses until it reports true, returns
// an error, or ctx ends; the error then names what was awaited, why the
// wait ended (a process exiting cancels ctx with its cause) and the last
// reason done gave for not being done.
func pollUntil(ctx context.Context, what string, done func(context.Context) (bool, error)) error {
	interval := pollFirstInterval
	var lastReason error
	for {
		ok, err := done(ctx)
		if ok {
			return nil
		}
		lastReason = err
		select {
		case <-ctx.Done():
			if lastReason != nil {
				return fmt.Errorf("waiting for %s: %w (last check: %v)", what, context.Cause(ctx), lastReason)
			}
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-time.After(interval):
		}
		interval = min(interval*3/2, pollMaxInterval)
	}
}

// waitForEtcd waits until etcd answers its /health endpoint, over TLS with
// kube-apiserver's client certificate.
func waitForEtcd(ctx context.Context, endpoint string, caPEM []byte, client testbed.KeyPair) error {
	cert, err := tls.X509KeyPair(client.CertPEM, client.KeyPEM)
	if err != nil {
		return fmt.Errorf("loading the etcd client certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	defer transport.CloseIdleConnections()
	httpClient := &http.Client{Transport: transport, Timeout: 2 * time.Second}

	return pollUntil(ctx, "etcd /health", func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/health", nil)
		if err != nil {
			return false, err
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		var health struct {
			Health string `json:"health"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&health); err != nil {
			return false, fmt.Errorf("decoding /health: %w", err)
		}
		return health.Health == "true", fmt.Errorf("/health said %q", health.Health)
	})
}

// waitForAPIServer waits until /readyz passes: storage is reachable and the
// post-start hooks (bootstrap RBAC roles, priority classes, ...) have run.
func waitForAPIServer(ctx context.Context, client kubernetes.Interface) error {
	return pollUntil(ctx, "kube-apiserver /readyz", func(ctx context.Context) (bool, error) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, err
		}
		return string(body) == "ok", fmt.Errorf("/readyz said %q", body)
	})
}

// waitForDefaultServiceAccount waits until kube-controller-manager's
// service account controller has created default/default: the controller
// manager is working, and pods can be created in the default namespace.
func waitForDefaultServiceAccount(ctx context.Context, client kubernetes.Interface) error {
	return pollUntil(ctx, "the default service account", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
}
