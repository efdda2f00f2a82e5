package kube

// Credentials never leave over plain HTTP without the opt-in, from any of
// the places they can come from: the block's attributes, the KUBE_*
// variables, a kubeconfig user's token, token file, password, client
// certificate, exec plugin or auth provider, a server written without a
// scheme, and a redirect from an https:// API server. Resolve refuses them
// at plan time, naming where they came from; a Cluster refuses to send any
// request that carries them, whatever let its configuration through. A
// listener in place of the API server records what arrives.

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// testAuthProvider is a client-go auth provider plugin, registered once,
// that sets a bearer token as a real one (OIDC, say) would.
const testAuthProvider = "gpu-test"

var registerTestAuthProvider = sync.OnceValue(func() error {
	return rest.RegisterAuthProviderPlugin(testAuthProvider, func(string, map[string]string, rest.AuthProviderConfigPersister) (rest.AuthProvider, error) {
		return testProvider{}, nil
	})
})

type testProvider struct{}

func (testProvider) WrapTransport(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer provider-s3cr3t")
		return next.RoundTrip(r)
	})
}

func (testProvider) Login() error { return nil }

func TestPlaintextCredentialsAreRefusedWhereverTheyComeFrom(t *testing.T) {
	listener := k8s.NewPlainHTTPTrap(t)
	server := listener.Server.URL
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("file-s3cr3t"), 0o600))
	client := clientPair(t)
	kubeconfig := func(server, user string) string { return k8s.WriteKubeconfig(t, server, "", user) }
	ofUser := func(chosenBy string) string {
		return `of user "intruder" of context "bed" (its current-context) in kubeconfig {{path}} (` + chosenBy + "); server "
	}
	const kubeconfigProblem = "is plain HTTP, and client-go never sends a kubeconfig user's credentials over plain HTTP " +
		"(not even with kubernetes.allow_plaintext_credentials): every request would go without them, as system:anonymous"

	tests := []struct {
		description string
		settings    ConnectionSettings
		env         map[string]string
		secret      string   // must appear in no message
		want        []string // in the error of Resolve; {{path}} is the kubeconfig's
		// kubeconfig: the credentials come from a kubeconfig, refused with
		// the opt-in too.
		kubeconfig bool
	}{
		{
			description: "A token in kubernetes.token for an http:// kubernetes.host.",
			settings:    ConnectionSettings{Host: server, Token: "attr-s3cr3t"},
			secret:      "attr-s3cr3t",
			want: []string{"refusing to send credentials to the Kubernetes API server " + server + " over plain HTTP",
				"in use: token from kubernetes.token; server " + server + " from kubernetes.host.", "Use an https:// URL in kubernetes.host"},
		},
		{
			description: "KUBE_HOST and KUBE_TOKEN.",
			env:         map[string]string{EnvHost: server, EnvToken: "env-s3cr3t"},
			secret:      "env-s3cr3t",
			want:        []string{"in use: token from KUBE_TOKEN; server " + server + " from KUBE_HOST.", "Use an https:// URL in KUBE_HOST"},
		},
		{
			description: "kubernetes.host with KUBE_TOKEN.",
			settings:    ConnectionSettings{Host: server},
			env:         map[string]string{EnvToken: "env-s3cr3t"},
			secret:      "env-s3cr3t",
			want:        []string{"in use: token from KUBE_TOKEN; server " + server + " from kubernetes.host."},
		},
		{
			description: "A client certificate from KUBE_CLIENT_CERT_DATA and KUBE_CLIENT_KEY_DATA.",
			env:         map[string]string{EnvHost: server, EnvClientCertificate: string(client.CertPEM), EnvClientKey: string(client.KeyPEM)},
			secret:      string(client.KeyPEM),
			want:        []string{`in use: client certificate "CN=intruder" from KUBE_CLIENT_CERT_DATA; server ` + server + " from KUBE_HOST."},
		},
		{
			description: "A kubeconfig user's token.",
			settings:    ConnectionSettings{ConfigPath: kubeconfig(server, "token: kubeconfig-s3cr3t")},
			secret:      "kubeconfig-s3cr3t",
			want: []string{server + " " + kubeconfigProblem, "in use: token " + ofUser("kubernetes.config_path"),
				`Use an https:// URL in the server of cluster "bed" in kubeconfig {{path}}`, "; or choose another context with kubernetes.config_context."},
			kubeconfig: true,
		},
		{
			description: "A kubeconfig user's token file.",
			settings:    ConnectionSettings{ConfigPath: kubeconfig(server, "tokenFile: "+tokenFile)},
			secret:      "file-s3cr3t",
			want:        []string{kubeconfigProblem, "in use: token file " + tokenFile + " " + ofUser("kubernetes.config_path")},
			kubeconfig:  true,
		},
		{
			description: "A kubeconfig user's username and password.",
			settings:    ConnectionSettings{ConfigPath: kubeconfig(server, "{username: admin, password: basic-s3cr3t}")},
			secret:      "basic-s3cr3t",
			want:        []string{kubeconfigProblem, `in use: username "admin" and password ` + ofUser("kubernetes.config_path")},
			kubeconfig:  true,
		},
		{
			description: "A kubeconfig user's client certificate.",
			settings: ConnectionSettings{ConfigPath: kubeconfig(server, fmt.Sprintf("{client-certificate-data: %s, client-key-data: %s}",
				encodePEM(string(client.CertPEM)), encodePEM(string(client.KeyPEM))))},
			secret:     string(client.KeyPEM),
			want:       []string{kubeconfigProblem, `in use: client certificate "CN=intruder" ` + ofUser("kubernetes.config_path")},
			kubeconfig: true,
		},
		{
			description: "A kubeconfig user's exec plugin.",
			settings: ConnectionSettings{ConfigPath: kubeconfig(server,
				"exec: {apiVersion: client.authentication.k8s.io/v1, command: /usr/local/bin/credential-plugin, interactiveMode: Never}")},
			want:       []string{kubeconfigProblem, `in use: credentials of exec plugin "/usr/local/bin/credential-plugin" ` + ofUser("kubernetes.config_path")},
			kubeconfig: true,
		},
		{
			description: "A kubeconfig user's auth provider.",
			settings:    ConnectionSettings{ConfigPath: kubeconfig(server, "auth-provider: {name: oidc}")},
			want:        []string{kubeconfigProblem, `in use: auth provider "oidc" ` + ofUser("kubernetes.config_path")},
			kubeconfig:  true,
		},
		{
			description: "A kubeconfig server without a scheme and without a CA, which client-go reads as plain HTTP.",
			settings:    ConnectionSettings{ConfigPath: kubeconfig(strings.TrimPrefix(server, "http://"), "token: kubeconfig-s3cr3t")},
			secret:      "kubeconfig-s3cr3t",
			want:        []string{server + " " + kubeconfigProblem},
			kubeconfig:  true,
		},
		{
			description: "A kubeconfig from KUBE_CONFIG_PATH.",
			env:         map[string]string{EnvConfigPath: kubeconfig(server, "token: kubeconfig-s3cr3t")},
			secret:      "kubeconfig-s3cr3t",
			want:        []string{kubeconfigProblem, "in use: token " + ofUser("KUBE_CONFIG_PATH")},
			kubeconfig:  true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			path := tc.settings.ConfigPath + tc.env[EnvConfigPath]
			optedIn := tc.settings
			optedIn.AllowPlaintextCredentials = true
			attempts := []ConnectionSettings{tc.settings}
			if tc.kubeconfig {
				attempts = append(attempts, optedIn)
			}
			for _, settings := range attempts {
				_, err := settings.Resolve(getenv)
				var refused *CredentialsError
				require.ErrorAs(t, err, &refused)
				for _, want := range tc.want {
					require.ErrorContains(t, err, strings.ReplaceAll(want, "{{path}}", path))
				}
				if tc.secret != "" {
					require.NotContains(t, err.Error(), tc.secret)
				}
			}
			if !tc.kubeconfig {
				_, err := optedIn.Resolve(getenv)
				require.NoError(t, err, "the opt-in lets the credentials go")
			}
		})
	}
	require.Zero(t, listener.Requests.Load(), "resolving sends nothing")
}

func TestPlaintextCredentialsAreNeverSentByACluster(t *testing.T) {
	require.NoError(t, registerTestAuthProvider())
	listener := k8s.NewPlainHTTPTrap(t)
	server := listener.Server.URL
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("file-s3cr3t"), 0o600))
	plugin := filepath.Join(dir, "credential-plugin")
	require.NoError(t, os.WriteFile(plugin, []byte(`#!/bin/sh
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-s3cr3t"}}'
`), 0o700))
	client := clientPair(t)
	// A Cluster built from any client configuration, whatever checked it
	// before, refuses to send a request that carries credentials.
	tests := []struct {
		description string
		config      rest.Config
		// certificateOnly: plain HTTP cannot carry a client certificate, so
		// the request goes out without it.
		certificateOnly bool
	}{
		{description: "A bearer token.", config: rest.Config{BearerToken: "token-s3cr3t"}},
		{description: "A token file.", config: rest.Config{BearerTokenFile: tokenFile}},
		{description: "A username and password.", config: rest.Config{Username: "admin", Password: "basic-s3cr3t"}},
		{description: "An exec plugin's token.", config: rest.Config{ExecProvider: &clientcmdapi.ExecConfig{
			APIVersion: "client.authentication.k8s.io/v1", Command: plugin, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}},
		{description: "An auth provider's token.", config: rest.Config{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: testAuthProvider}}},
		{description: "A client certificate.", config: rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: client.CertPEM, KeyData: client.KeyPEM}},
			certificateOnly: true},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			cfg := tc.config
			cfg.Host = server
			c, err := Connect(&cfg, ClusterOptions{})
			require.NoError(t, err)
			before := listener.Requests.Load()
			err = listNodes(c)
			if tc.certificateOnly {
				require.Equal(t, before+1, listener.Requests.Load(), "the request went out, without the certificate")
				return
			}
			var refused *CredentialsError
			require.ErrorAs(t, err, &refused)
			require.ErrorContains(t, err, "refusing to send credentials to the Kubernetes API server "+server+" over plain HTTP")
			require.Equal(t, before, listener.Requests.Load(), "nothing was sent")
		})
	}

	// A user and password in the server's URL, which Go sends as basic
	// authentication, never go out either, and no message repeats the
	// password.
	withUser := strings.Replace(server, "http://", "http://admin:url-s3cr3t@", 1)
	c, err := Connect(&rest.Config{Host: withUser}, ClusterOptions{})
	require.NoError(t, err)
	before := listener.Requests.Load()
	err = listNodes(c)
	var refused *CredentialsError
	require.ErrorAs(t, err, &refused)
	require.Equal(t, before, listener.Requests.Load(), "nothing was sent")
	require.NotContains(t, err.Error(), "url-s3cr3t")

	// client-go itself leaves a kubeconfig user's credentials out of the
	// configuration of a plain-HTTP server.
	cfg, err := clientcmd.BuildConfigFromFlags("", k8s.WriteKubeconfig(t, server, "", "token: kubeconfig-s3cr3t"))
	require.NoError(t, err)
	c, err = Connect(cfg, ClusterOptions{})
	require.NoError(t, err)
	require.Error(t, listNodes(c))
	require.Positive(t, listener.Requests.Load(), "the kubeconfig's request went out")

	require.Zero(t, listener.Credentials.Load(), "credentials arrived over plain HTTP; the last: %q", listener.Authorization())
}

func TestPlaintextCredentialsInTheBlockFailValidation(t *testing.T) {
	client := clientPair(t)
	tests := []struct {
		description string
		settings    ConnectionSettings
		want        string // empty: valid
	}{
		{"A token for an http:// host is refused.", ConnectionSettings{Host: "http://10.0.0.1:8080", Token: "t"},
			`kubernetes.host "http://10.0.0.1:8080" is plain HTTP: the token in kubernetes.token would travel in cleartext. Use an https:// URL, or set kubernetes.allow_plaintext_credentials = true`},
		{"A client certificate for an http:// host is refused.", ConnectionSettings{Host: "http://10.0.0.1:8080", ClientCertificate: string(client.CertPEM), ClientKey: string(client.KeyPEM)},
			"the client certificate in kubernetes.client_certificate cannot authenticate without TLS"},
		{"An http:// host without credentials is valid.", ConnectionSettings{Host: "http://10.0.0.1:8080"}, ""},
		{"A token for an http:// host with the opt-in is valid.", ConnectionSettings{Host: "http://10.0.0.1:8080", Token: "t", AllowPlaintextCredentials: true}, ""},
		{"A token for an https:// host is valid.", ConnectionSettings{Host: "https://10.0.0.1:6443", Token: "t"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			problems := tc.settings.Validate()
			if tc.want == "" {
				require.Empty(t, problems)
				return
			}
			require.Len(t, problems, 1)
			require.Equal(t, "host", problems[0].Attribute)
			require.Contains(t, problems[0].Problem, tc.want)
		})
	}
}

func TestPlaintextServerWithoutCredentialsNeedsNoOptIn(t *testing.T) {
	listener := k8s.NewPlainHTTPTrap(t)
	path := k8s.WriteKubeconfig(t, listener.Server.URL, "", "{}")
	conn, err := ConnectionSettings{ConfigPath: path}.Resolve(noEnvironment)
	require.NoError(t, err)
	c, err := conn.Connect(ClusterOptions{})
	require.NoError(t, err)
	err = listNodes(c)
	require.ErrorContains(t, err, `in use: no credentials: user "intruder" of context "bed" (its current-context) in kubeconfig `+path+" (kubernetes.config_path) has none.")
	require.Equal(t, int64(1), listener.Requests.Load(), "the request reached the server")
	require.Zero(t, listener.Credentials.Load())
}

func TestPlaintextCredentialsGoWithTheOptIn(t *testing.T) {
	listener := k8s.NewPlainHTTPTrap(t)
	conn, err := ConnectionSettings{Host: listener.Server.URL, Token: "optin-s3cr3t", AllowPlaintextCredentials: true}.Resolve(noEnvironment)
	require.NoError(t, err)
	c, err := conn.Connect(ClusterOptions{})
	require.NoError(t, err)
	err = listNodes(c)
	require.ErrorContains(t, err, "rejected the credentials (HTTP 401 Unauthorized)", "the listener answers 401")
	require.Equal(t, "Bearer optin-s3cr3t", listener.Authorization(), "the opt-in sends the token over plain HTTP")
}

func TestPlaintextCredentialsDoNotFollowARedirectToPlainHTTP(t *testing.T) {
	listener := k8s.NewPlainHTTPTrap(t)
	// An https:// API server (or a proxy in front of it) that redirects
	// every request to the plain-HTTP listener.
	redirector := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, listener.Server.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: redirector.Certificate().Raw}))

	conn, err := ConnectionSettings{Host: redirector.URL, ClusterCACertificate: ca, Token: "redirect-s3cr3t"}.Resolve(noEnvironment)
	require.NoError(t, err, "an https:// host is fine")
	c, err := conn.Connect(ClusterOptions{})
	require.NoError(t, err)
	err = listNodes(c)
	var refused *CredentialsError
	require.ErrorAs(t, err, &refused)
	require.ErrorContains(t, err, "refusing to send credentials to the Kubernetes API server "+listener.Server.URL+" over plain HTTP")
	require.Zero(t, listener.Requests.Load(), "the redirect was not followed with the token")
}

// clientPair is a client certificate, named intruder, of a CA of its own.
func clientPair(t *testing.T) testbed.KeyPair {
	t.Helper()
	pair, err := newAuthority(t, "intruder-ca").ClientPair("intruder")
	require.NoError(t, err)
	return pair
}
