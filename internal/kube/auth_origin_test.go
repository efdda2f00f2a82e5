package kube

import (
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestDescribeCertificatesNamesSubjectAndValidity(t *testing.T) {
	ca := newSelfSignedCA(t, "describe-ca")
	expiredAt := time.Now().Add(-time.Hour).Truncate(time.Second)
	expired := ca.serving(t, "old-client", expiredAt.Add(-time.Hour), expiredAt)
	expiredPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: expired.Certificate[0]}))
	notYet := time.Now().Add(time.Hour).Truncate(time.Second)
	future := ca.serving(t, "new-client", notYet, notYet.Add(time.Hour))
	futurePEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: future.Certificate[0]}))

	tests := []struct {
		description, pem, want string
	}{
		{"A valid certificate is named by its subject.", ca.pem, `"CN=describe-ca"`},
		{"An expired one says since when.", expiredPEM, `"CN=old-client" (expired ` + expiredAt.UTC().Format(time.RFC3339) + ")"},
		{"One not valid yet says from when.", futurePEM, `"CN=new-client" (not valid before ` + notYet.UTC().Format(time.RFC3339) + ")"},
		{"A bundle counts the others.", ca.pem + expiredPEM + futurePEM, `"CN=describe-ca" and 2 more`},
		{"Text that holds no certificate says so.", "not a certificate", "(no PEM certificate)"},
		{"A certificate that does not parse says so.", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "(a PEM certificate that does not parse: "},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			require.True(t, strings.HasPrefix(describeCertificatesPEM([]byte(tc.pem)), tc.want), describeCertificatesPEM([]byte(tc.pem)))
		})
	}
}

func TestUnauthorizedErrorAdvisesForEachKindOfCredentials(t *testing.T) {
	raw := clientcmdapi.Config{
		Contexts:  map[string]*clientcmdapi.Context{"prod": {Cluster: "eks", AuthInfo: "ci"}},
		Clusters:  map[string]*clientcmdapi.Cluster{"eks": {Server: "https://eks.example:443", LocationOfOrigin: "/home/ci/.kube/config"}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"ci": {LocationOfOrigin: "/home/ci/.kube/config"}},
	}
	src := kubeconfigSource{files: "/home/ci/.kube/config", chosenBy: "KUBECONFIG", contextName: "prod", contextFrom: "KUBE_CTX"}
	withUser := func(user clientcmdapi.AuthInfo) origin {
		user.LocationOfOrigin = "/home/ci/.kube/config"
		raw.AuthInfos["ci"] = &user
		return kubeconfigOrigin(raw, src, &rest.Config{Host: "https://eks.example:443"})
	}
	tests := []struct {
		description string
		origin      origin
		want        []string
	}{
		{
			"An exec plugin is named by its command.",
			withUser(clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "aws"}}),
			[]string{`in use: credentials of exec plugin "aws" of user "ci" of context "prod" (KUBE_CTX) in kubeconfig /home/ci/.kube/config (KUBECONFIG).`,
				`Fix user "ci" in kubeconfig /home/ci/.kube/config: the exec plugin's credentials were rejected: run its command by hand`,
				"; or choose another context with kubernetes.config_context."},
		},
		{
			"A username and password name the username only.",
			withUser(clientcmdapi.AuthInfo{Username: "admin", Password: "hunter2"}),
			[]string{`in use: username "admin" and password of user "ci"`, "the API server rejects a wrong username or password"},
		},
		{
			"An auth provider is named.",
			withUser(clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"id-token": "hunter2"}}}),
			[]string{`in use: auth provider "oidc" of user "ci"`, "the auth provider's token was rejected"},
		},
		{
			"A user without credentials says so.",
			withUser(clientcmdapi.AuthInfo{}),
			[]string{`in use: no credentials: user "ci" of context "prod" (KUBE_CTX) in kubeconfig /home/ci/.kube/config (KUBECONFIG) has none.`,
				`Set user "ci" in kubeconfig /home/ci/.kube/config: no credentials were sent`},
		},
		{
			"The in-cluster service account names its token file.",
			inClusterOrigin(&rest.Config{Host: "https://10.96.0.1:443", BearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}),
			[]string{"in use: service account token file /var/run/secrets/kubernetes.io/serviceaccount/token (in-cluster).", "Fix the pod's service account"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			err := unauthorizedError(tc.origin, "https://eks.example:443")
			require.True(t, strings.HasPrefix(err.Error(), "the Kubernetes API server https://eks.example:443 rejected the credentials (HTTP 401 Unauthorized); "), err.Error())
			for _, want := range tc.want {
				require.Contains(t, err.Error(), want)
			}
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
}
