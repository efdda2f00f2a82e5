package kube

// A TokenSource (kubernetes.eks) gives every request its bearer token: the
// token is fetched per request, goes through the credentials transport (so
// it never travels over plain HTTP and a 401 is explained as the source's,
// not as KUBE_TOKEN's), and cannot be mixed with other credentials.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// fixedTokenSource hands out one token (or one error) and counts the calls.
type fixedTokenSource struct {
	token string
	err   error
	calls atomic.Int64
}

func (s *fixedTokenSource) Token(context.Context) (string, time.Time, error) {
	s.calls.Add(1)
	return s.token, time.Now().Add(time.Hour), s.err
}

func (s *fixedTokenSource) String() string { return `EKS token for cluster "prod" in us-west-2` }

func TestTokenSourceSettingsValidate(t *testing.T) {
	source := &fixedTokenSource{token: "t"}
	tests := []struct {
		description string
		settings    ConnectionSettings
		attributes  []string
	}{
		{"A token source with a host and CA is valid.", ConnectionSettings{Host: "https://h", ClusterCACertificate: testPEM, TokenSource: source}, nil},
		{"A token source and a token conflict.", ConnectionSettings{Host: "https://h", Token: "t", TokenSource: source}, []string{"token"}},
		{"A token source and a client certificate conflict.", ConnectionSettings{Host: "https://h", ClientCertificate: testPEM, ClientKey: testPEM, TokenSource: source},
			[]string{"client_certificate", "client_key"}},
		{"A token source and a kubeconfig conflict.", ConnectionSettings{ConfigPath: "kc", TokenSource: source}, []string{"config_path"}},
		{"A token source needs a host.", ConnectionSettings{TokenSource: source}, []string{"host"}},
		{"A token source for an http:// host is refused.", ConnectionSettings{Host: "http://h", TokenSource: source}, []string{"host"}},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			var got []string
			for _, e := range tc.settings.Validate() {
				got = append(got, e.Attribute)
				require.Contains(t, e.Problem, "kubernetes.", "the problem names the attribute")
				require.Contains(t, e.Problem, `EKS token for cluster "prod"`, "the problem names the token source")
			}
			require.Equal(t, tc.attributes, got)
		})
	}
}

func TestTokenSourceTakesNothingFromTheEnvironment(t *testing.T) {
	source := &fixedTokenSource{token: "t"}
	env := map[string]string{EnvToken: "env-token", EnvClientCertificate: testPEM, EnvClientKey: testPEM, EnvInsecure: "true", EnvConfigPath: "kc"}
	s, err := ConnectionSettings{Host: "https://h", ClusterCACertificate: testPEM, TokenSource: source}.WithEnvironment(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, ConnectionSettings{Host: "https://h", ClusterCACertificate: testPEM, TokenSource: source}, s)
}

func TestTokenSourceTokenAuthenticatesEachRequest(t *testing.T) {
	requireCluster(t)
	source := &fixedTokenSource{token: cluster.ServiceAccountToken(t, "token-source")}
	c := connectSettings(t, ConnectionSettings{Host: cluster.APIServerURL(), ClusterCACertificate: testbedCA(), TokenSource: source}, nil)
	require.NoError(t, listNodes(c))
	require.NoError(t, listNodes(c))
	require.GreaterOrEqual(t, source.calls.Load(), int64(2), "the token is asked of the source for every request")
}

func TestTokenSourceRejectedTokenNamesTheSource(t *testing.T) {
	requireCluster(t)
	const token = "k8s-aws-v1.wrong-s3cr3t"
	c := connectSettings(t, ConnectionSettings{Host: cluster.APIServerURL(), ClusterCACertificate: testbedCA(), TokenSource: &fixedTokenSource{token: token}}, nil)
	err := listNodes(c)
	require.True(t, apierrors.IsUnauthorized(err), "still a 401 to callers: %v", err)
	require.ErrorContains(t, err, `in use: EKS token for cluster "prod" in us-west-2 from kubernetes.eks.`)
	require.ErrorContains(t, err, "EKS answers 401 for a token whose IAM identity has no access entry")
	require.NotContains(t, err.Error(), EnvToken)
	require.NotContains(t, err.Error(), token)
}

func TestTokenSourceFailureEndsTheRequestWithTheCause(t *testing.T) {
	requireCluster(t)
	cause := errors.New("no EC2 IMDS role found")
	c := connectSettings(t, ConnectionSettings{Host: cluster.APIServerURL(), ClusterCACertificate: testbedCA(), TokenSource: &fixedTokenSource{err: cause}}, nil)
	err := listNodes(c)
	var credentials *CredentialsError
	require.ErrorAs(t, err, &credentials)
	require.ErrorIs(t, err, cause)
	require.ErrorContains(t, err, "could not get a bearer token for the Kubernetes API server "+cluster.APIServerURL())
	require.ErrorContains(t, err, `in use: EKS token for cluster "prod" in us-west-2 from kubernetes.eks`)
}

func TestTokenSourceTokenNeverGoesOverPlainHTTP(t *testing.T) {
	trap := k8s.NewPlainHTTPTrap(t)
	source := &fixedTokenSource{token: "plain-s3cr3t"}
	settings := ConnectionSettings{Host: trap.Server.URL, TokenSource: source}
	_, err := settings.Resolve(func(string) string { return "" })
	require.ErrorContains(t, err, "refusing to send credentials to the Kubernetes API server "+trap.Server.URL+" over plain HTTP")

	// Whatever lets such a connection through, the Cluster does not send it.
	conn, err := ConnectionSettings{Host: "https://" + trap.Server.Listener.Addr().String(), TokenSource: source}.Resolve(func(string) string { return "" })
	require.NoError(t, err)
	conn.config.Host = trap.Server.URL
	c, err := conn.Connect(ClusterOptions{})
	require.NoError(t, err)
	err = listNodes(c)
	require.ErrorContains(t, err, "over plain HTTP", fmt.Sprint(err))
	require.NotContains(t, err.Error(), "plain-s3cr3t")
	require.Zero(t, trap.Requests.Load(), "nothing reached the plain-HTTP listener")
}
