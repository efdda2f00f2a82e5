package kube

// Authentication and TLS failures against the testbed's real API server:
// each error names the setting to fix and what was tried, never the
// secret, and a wait ends on it at once instead of retrying it as an
// unreachable API server.

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// testbedCA is the PEM of the CA that signed the testbed API server's
// certificate.
func testbedCA() string { return string(cluster.RESTConfig().CAData) }

// connectSettings resolves s with env as the environment and connects.
func connectSettings(t *testing.T, s ConnectionSettings, env map[string]string) *Cluster {
	t.Helper()
	conn, err := s.Resolve(func(k string) string { return env[k] })
	require.NoError(t, err)
	c, err := conn.Connect(ClusterOptions{})
	require.NoError(t, err)
	return c
}

// listNodes is one request through c, as gpu_inventory makes it.
func listNodes(c *Cluster) error {
	_, err := c.ListInventory(context.Background(), InventoryOptions{})
	return err
}

// newAuthority is a CA that is not the testbed's.
func newAuthority(t *testing.T, name string) *testbed.Authority {
	t.Helper()
	ca, err := testbed.NewAuthority(name)
	require.NoError(t, err)
	return ca
}

func TestCredentialsRejectedTokenNamesWhereItCameFrom(t *testing.T) {
	requireCluster(t)
	const token = "wrong-token-s3cr3t"
	tests := []struct {
		description string
		settings    ConnectionSettings
		env         map[string]string
		want        []string
	}{
		{
			description: "A token from kubernetes.token is named as such.",
			settings:    ConnectionSettings{Host: cluster.APIServerURL(), ClusterCACertificate: testbedCA(), Token: token},
			want:        []string{"in use: token from kubernetes.token.", "Fix kubernetes.token: the API server rejects a token that is wrong, expired or revoked"},
		},
		{
			description: "A token from KUBE_TOKEN is named as such.",
			settings:    ConnectionSettings{Host: cluster.APIServerURL(), ClusterCACertificate: testbedCA()},
			env:         map[string]string{EnvToken: token},
			want:        []string{"in use: token from KUBE_TOKEN.", "Fix KUBE_TOKEN:"},
		},
		{
			description: "Host, CA and token all from the environment.",
			env:         map[string]string{EnvHost: cluster.APIServerURL(), EnvClusterCACertificate: testbedCA(), EnvToken: token},
			want:        []string{"in use: token from KUBE_TOKEN.", "Fix KUBE_TOKEN:"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			err := listNodes(connectSettings(t, tc.settings, tc.env))
			require.Error(t, err)
			require.True(t, apierrors.IsUnauthorized(err), "still a 401 to callers: %v", err)
			require.ErrorContains(t, err, "the Kubernetes API server "+cluster.APIServerURL()+" rejected the credentials (HTTP 401 Unauthorized)")
			for _, want := range tc.want {
				require.ErrorContains(t, err, want)
			}
			require.NotContains(t, err.Error(), token)
		})
	}
}

func TestCredentialsRejectedUserOfAKubeconfigNamesUserContextAndFile(t *testing.T) {
	requireCluster(t)
	const token = "kubeconfig-token-s3cr3t"
	path := k8s.WriteKubeconfig(t, cluster.APIServerURL(), fmt.Sprintf("certificate-authority-data: %q", encodePEM(testbedCA())), "token: "+token)

	err := listNodes(connectSettings(t, ConnectionSettings{ConfigPath: path}, nil))
	require.True(t, apierrors.IsUnauthorized(err), "%v", err)
	require.ErrorContains(t, err, `in use: token of user "intruder" of context "bed" (its current-context) in kubeconfig `+path+" (kubernetes.config_path).")
	require.ErrorContains(t, err, `Fix user "intruder" in kubeconfig `+path+": the API server rejects a token")
	require.ErrorContains(t, err, "; or choose another context with kubernetes.config_context.")
	require.NotContains(t, err.Error(), token)

	err = listNodes(connectSettings(t, ConnectionSettings{}, map[string]string{EnvConfigPath: path, EnvConfigContext: "bed"}))
	require.ErrorContains(t, err, `in use: token of user "intruder" of context "bed" (KUBE_CTX) in kubeconfig `+path+" (KUBE_CONFIG_PATH).")
}

func TestCredentialsNoneNamesTheSettingsThatGiveSome(t *testing.T) {
	requireCluster(t)
	err := listNodes(connectSettings(t, ConnectionSettings{Host: cluster.APIServerURL(), ClusterCACertificate: testbedCA()}, nil))
	require.True(t, apierrors.IsForbidden(err), "still a 403 to callers: %v", err)
	require.ErrorContains(t, err, `User "system:anonymous" cannot list resource "nodes"`, "the API server's own message stays")
	require.ErrorContains(t, err, "the request carried no credentials, so the API server took it as system:anonymous; "+
		"in use: no credentials (neither kubernetes.token nor kubernetes.client_certificate is set). "+
		"Set kubernetes.token (or KUBE_TOKEN), or kubernetes.client_certificate and kubernetes.client_key (or KUBE_CLIENT_CERT_DATA and KUBE_CLIENT_KEY_DATA)")
}

func TestCredentialsTokenOfADeletedServiceAccountIsRejected(t *testing.T) {
	requireCluster(t)
	token := cluster.ServiceAccountToken(t, "auth-revoked")
	settings := ConnectionSettings{Host: cluster.APIServerURL(), ClusterCACertificate: testbedCA(), Token: token}
	c := connectSettings(t, settings, nil)
	require.NoError(t, listNodes(c), "the token works while its service account exists")

	ctx := context.Background()
	require.NoError(t, cluster.Client().CoreV1().ServiceAccounts(metav1.NamespaceDefault).Delete(ctx, "auth-revoked", metav1.DeleteOptions{}))
	// kube-apiserver looks the service account up for every token it has
	// not authenticated in the last 10 s (its token cache, which has no
	// flag): a real cluster lets a revoked token work that long too.
	require.Eventually(t, func() bool { return apierrors.IsUnauthorized(listNodes(c)) }, 2*time.Minute, 100*time.Millisecond,
		"the API server keeps accepting the token of a deleted service account")

	err := listNodes(c)
	require.ErrorContains(t, err, "rejected the credentials (HTTP 401 Unauthorized); in use: token from kubernetes.token.")
	require.ErrorContains(t, err, "a service account's token stops working once the service account is deleted")
	require.NotContains(t, err.Error(), token)

	// The next Terraform command builds its client afresh: nothing on the
	// client side outlives the service account either.
	require.True(t, apierrors.IsUnauthorized(listNodes(connectSettings(t, settings, nil))))
}

func TestCredentialsForeignClientCertificateNamesTheCertificate(t *testing.T) {
	requireCluster(t)
	intruder, err := newAuthority(t, "intruder-ca").ClientPair("intruder", "system:masters")
	require.NoError(t, err)
	err = listNodes(connectSettings(t, ConnectionSettings{
		Host:                 cluster.APIServerURL(),
		ClusterCACertificate: testbedCA(),
		ClientCertificate:    string(intruder.CertPEM),
		ClientKey:            string(intruder.KeyPEM),
	}, nil))
	// kube-apiserver asks for a client certificate without requiring one
	// its CA signed: it answers a foreign one with a 401.
	require.True(t, apierrors.IsUnauthorized(err), "%v", err)
	require.ErrorContains(t, err, `in use: client certificate "CN=intruder,O=system:masters" from kubernetes.client_certificate.`)
	require.ErrorContains(t, err, "Fix kubernetes.client_certificate and kubernetes.client_key: ")
	require.NotContains(t, err.Error(), string(intruder.KeyPEM))
}

func TestCredentialsWrongCANamesTheCASetting(t *testing.T) {
	requireCluster(t)
	other := string(newAuthority(t, "some-other-ca").CertPEM())

	err := listNodes(connectSettings(t, ConnectionSettings{Host: cluster.APIServerURL(), ClusterCACertificate: other, Token: "t"}, nil))
	var rejected *CredentialsError
	require.ErrorAs(t, err, &rejected)
	require.ErrorContains(t, err, "the Kubernetes API server "+cluster.APIServerURL()+` presented a certificate issued by "CN=gpu-testbed-ca"`)
	require.ErrorContains(t, err, `in use: CA "CN=some-other-ca" from kubernetes.cluster_ca_certificate.`)
	require.ErrorContains(t, err, "Set kubernetes.cluster_ca_certificate to the PEM of the CA that signed the API server's certificate.")
	require.ErrorContains(t, err, "x509: certificate signed by unknown authority")

	err = listNodes(connectSettings(t, ConnectionSettings{}, map[string]string{EnvHost: cluster.APIServerURL(), EnvClusterCACertificate: other}))
	require.ErrorContains(t, err, `in use: CA "CN=some-other-ca" from KUBE_CLUSTER_CA_CERT_DATA.`)

	err = listNodes(connectSettings(t, ConnectionSettings{Host: cluster.APIServerURL()}, nil))
	require.ErrorContains(t, err, "in use: the system's trusted CAs (kubernetes.cluster_ca_certificate is not set).")

	path := k8s.WriteKubeconfig(t, cluster.APIServerURL(), fmt.Sprintf("certificate-authority-data: %q", encodePEM(other)), "token: t")
	err = listNodes(connectSettings(t, ConnectionSettings{ConfigPath: path}, nil))
	require.ErrorContains(t, err, `in use: CA "CN=some-other-ca" from certificate-authority-data of cluster "bed" of context "bed" (its current-context) in kubeconfig `+path+" (kubernetes.config_path).")
	require.ErrorContains(t, err, `Set certificate-authority-data of cluster "bed" in kubeconfig `+path)
}

func TestCredentialsCertificateForAnotherHostNameNamesTheHost(t *testing.T) {
	requireCluster(t)
	// The API server's certificate names 127.0.0.1, not 127.0.0.2, which
	// reaches it through a TCP proxy as a load balancer would.
	u, err := url.Parse(cluster.APIServerURL())
	require.NoError(t, err)
	proxy := newCuttableProxyOn(t, "127.0.0.2", u.Host)
	host := "https://" + proxy.addr

	err = listNodes(connectSettings(t, ConnectionSettings{Host: host, ClusterCACertificate: testbedCA(), Token: "t"}, nil))
	var rejected *CredentialsError
	require.ErrorAs(t, err, &rejected)
	require.ErrorContains(t, err, "presented a certificate for localhost, kubernetes, kubernetes.default, kubernetes.default.svc, kubernetes.default.svc.cluster.local, 127.0.0.1, 10.96.0.1, not for \"127.0.0.2\"")
	require.ErrorContains(t, err, "in use: server "+host+" from kubernetes.host.")
	require.ErrorContains(t, err, "Set kubernetes.host to a name or address the certificate is valid for")

	path := k8s.WriteKubeconfig(t, host, fmt.Sprintf("certificate-authority-data: %q", encodePEM(testbedCA())), "token: t")
	err = listNodes(connectSettings(t, ConnectionSettings{ConfigPath: path}, nil))
	require.ErrorContains(t, err, `Set the server of cluster "bed" in kubeconfig `+path)
}

func TestCredentialsRejectionEndsAWaitAtOnce(t *testing.T) {
	requireCluster(t)
	tests := []struct {
		description string
		settings    ConnectionSettings
		want        string
	}{
		{"A rejected token ends the wait.", ConnectionSettings{Host: cluster.APIServerURL(), ClusterCACertificate: testbedCA(), Token: "wrong"}, "HTTP 401 Unauthorized"},
		{"An unknown CA ends the wait.", ConnectionSettings{Host: cluster.APIServerURL(), ClusterCACertificate: string(newAuthority(t, "wait-ca").CertPEM())}, "unknown authority"},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			c := connectSettings(t, tc.settings, nil)
			// The wait alone: an informer that would retry a failing list
			// until its context ends, or until the API server counted as
			// unreachable for the 5-minute default.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			configMaps := c.client.CoreV1().ConfigMaps(metav1.NamespaceDefault)
			err := c.runWait(ctx, "config_map", "default/never", func(ctx context.Context) error {
				_, err := WaitForObject(ctx, ListWatchFunctions[*corev1.ConfigMapList]{List: configMaps.List, Watch: configMaps.Watch}, "never",
					func(*corev1.ConfigMap, bool) (bool, error) { return false, nil })
				return err
			})
			require.NoError(t, ctx.Err(), "the wait ran until its own deadline")
			var rejected *CredentialsError
			require.ErrorAs(t, err, &rejected)
			require.ErrorContains(t, err, "waiting for default/never: ")
			require.ErrorContains(t, err, tc.want)
			require.False(t, IsUnreachable(err))
		})
	}
}

// encodePEM is PEM text as a kubeconfig's *-data fields hold it: base64.
func encodePEM(pemText string) string { return base64.StdEncoding.EncodeToString([]byte(pemText)) }
