package kube

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const testPEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func TestConnectionSettingsValidate(t *testing.T) {
	tests := []struct {
		description string
		settings    ConnectionSettings
		attributes  []string // attributes named by the errors, in order
	}{
		{"An empty block is valid: the environment decides.", ConnectionSettings{}, nil},
		{"A kubeconfig with a context is valid.", ConnectionSettings{ConfigPath: "~/.kube/config", ConfigContext: "prod"}, nil},
		{"A host with a token and CA is valid.", ConnectionSettings{Host: "https://10.0.0.1:6443", Token: "t", ClusterCACertificate: testPEM}, nil},
		{"A kubeconfig and a host conflict.", ConnectionSettings{ConfigPath: "kc", Host: "https://h"}, []string{"host"}},
		{"A context without a kubeconfig but with a host is rejected.", ConnectionSettings{ConfigContext: "c", Host: "https://h"}, []string{"config_context"}},
		{"A host without a scheme is rejected.", ConnectionSettings{Host: "10.0.0.1:6443"}, []string{"host"}},
		{"A host with a user and password is rejected.", ConnectionSettings{Host: "https://admin:hunter2@10.0.0.1:6443"}, []string{"host"}},
		{"A client certificate needs its key.", ConnectionSettings{Host: "https://h", ClientCertificate: testPEM}, []string{"client_key"}},
		{"A client key needs its certificate.", ConnectionSettings{Host: "https://h", ClientKey: testPEM}, []string{"client_certificate"}},
		{"Insecure and a CA conflict.", ConnectionSettings{Host: "https://h", Insecure: true, ClusterCACertificate: testPEM}, []string{"insecure"}},
		{"A CA given as a path is rejected.", ConnectionSettings{Host: "https://h", ClusterCACertificate: "/etc/ca.crt"}, []string{"cluster_ca_certificate"}},
		{"A token with a kubeconfig is rejected, not silently ignored.", ConnectionSettings{ConfigPath: "kc", Token: "t"}, []string{"token"}},
		{"A client certificate and a CA with a kubeconfig are rejected.", ConnectionSettings{ConfigPath: "kc", ClientCertificate: testPEM, ClientKey: testPEM, ClusterCACertificate: testPEM},
			[]string{"client_certificate", "client_key", "cluster_ca_certificate"}},
		{"A token without a host is valid in the block: KUBE_HOST may give one.", ConnectionSettings{Token: "t"}, nil},
		{"A token for an http:// host is refused.", ConnectionSettings{Host: "http://h", Token: "t"}, []string{"host"}},
		{"A token for an http:// host with the opt-in is valid.", ConnectionSettings{Host: "http://h", Token: "t", AllowPlaintextCredentials: true}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			var got []string
			for _, e := range tc.settings.Validate() {
				got = append(got, e.Attribute)
				require.Contains(t, e.Problem, "kubernetes.", "the problem names the attribute")
				require.NotContains(t, e.Problem, "hunter2", "no problem repeats a password")
			}
			require.Equal(t, tc.attributes, got)
		})
	}
}

func TestConnectionSettingsWithEnvironment(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	tests := []struct {
		description string
		settings    ConnectionSettings
		env         map[string]string
		want        ConnectionSettings
		wantErr     string
	}{
		{
			description: "The environment fills an empty block.",
			env:         map[string]string{EnvHost: "https://h", EnvToken: "t", EnvInsecure: "true"},
			want:        ConnectionSettings{Host: "https://h", Token: "t", Insecure: true},
		},
		{
			description: "Attributes win over the environment.",
			settings:    ConnectionSettings{Host: "https://attr", Token: "attr"},
			env:         map[string]string{EnvHost: "https://env", EnvToken: "env"},
			want:        ConnectionSettings{Host: "https://attr", Token: "attr"},
		},
		{
			description: "A kubeconfig in the block is not mixed with a host from the environment.",
			settings:    ConnectionSettings{ConfigPath: "kc"},
			env:         map[string]string{EnvHost: "https://env", EnvConfigContext: "ctx"},
			want:        ConnectionSettings{ConfigPath: "kc", ConfigContext: "ctx"},
		},
		{
			description: "KUBE_HOST and KUBE_CONFIG_PATH together are ambiguous.",
			env:         map[string]string{EnvHost: "https://env", EnvConfigPath: "kc"},
			wantErr:     "both KUBE_HOST and KUBE_CONFIG_PATH",
		},
		{
			description: "KUBE_INSECURE must be a boolean.",
			env:         map[string]string{EnvInsecure: "yes please"},
			wantErr:     "KUBE_INSECURE",
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			got, err := tc.settings.WithEnvironment(env(tc.env))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// noEnvironment is a getenv with no KUBE_* variables set.
func noEnvironment(string) string { return "" }

func TestResolveKubeconfigContext(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
current-context: a
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "https://b.example:6443"}
users:
- name: u
  user: {token: secret}
contexts:
- name: a
  context: {cluster: a, user: u}
- name: b
  context: {cluster: b, user: u}
`), 0o600))

	conn, err := ConnectionSettings{ConfigPath: path}.Resolve(noEnvironment)
	require.NoError(t, err)
	require.Equal(t, "https://a.example:6443", conn.config.Host)

	conn, err = ConnectionSettings{ConfigPath: path, ConfigContext: "b"}.Resolve(noEnvironment)
	require.NoError(t, err)
	require.Equal(t, "https://b.example:6443", conn.config.Host)
	require.False(t, conn.config.Insecure, "TLS verification stays on by default")

	_, err = ConnectionSettings{ConfigPath: path, ConfigContext: "missing"}.Resolve(noEnvironment)
	require.ErrorContains(t, err, "missing")

	_, err = ConnectionSettings{ConfigPath: filepath.Join(dir, "absent")}.Resolve(noEnvironment)
	require.ErrorContains(t, err, "absent")
}

func TestResolveNamesTheEnvironmentVariableAValueCameFrom(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	tests := []struct {
		description string
		settings    ConnectionSettings
		env         map[string]string
		want        string
	}{
		{
			description: "A host from KUBE_HOST is named KUBE_HOST.",
			env:         map[string]string{EnvHost: "10.0.0.1:6443"},
			want:        `KUBE_HOST "10.0.0.1:6443" is not a URL`,
		},
		{
			description: "KUBE_INSECURE with a CA from the block.",
			settings:    ConnectionSettings{Host: "https://h", ClusterCACertificate: testPEM},
			env:         map[string]string{EnvInsecure: "true"},
			want:        "KUBE_INSECURE = true turns off the check that kubernetes.cluster_ca_certificate is for",
		},
		{
			description: "KUBE_TOKEN with KUBE_CONFIG_PATH would be ignored: refused.",
			env:         map[string]string{EnvConfigPath: "kc", EnvToken: "t"},
			want:        "KUBE_TOKEN only applies with kubernetes.host: with a kubeconfig (KUBE_CONFIG_PATH)",
		},
		{
			description: "A token without any host would be ignored for a default kubeconfig: refused.",
			settings:    ConnectionSettings{Token: "t"},
			want:        "kubernetes.token only applies with kubernetes.host (or KUBE_HOST), which is not set",
		},
		{
			description: "KUBE_CLUSTER_CA_CERT_DATA without any host: refused.",
			env:         map[string]string{EnvClusterCACertificate: testPEM},
			want:        "KUBE_CLUSTER_CA_CERT_DATA only applies with kubernetes.host (or KUBE_HOST), which is not set",
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			_, err := tc.settings.Resolve(env(tc.env))
			require.ErrorContains(t, err, tc.want)
		})
	}
}
