package k8s

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// The identities the testbed's clients authenticate as, by client
// certificate. kube-scheduler gets the bootstrap RBAC role made for it.
// kube-controller-manager runs with --use-service-account-credentials=false,
// so it needs the rights of every controller: it is in system:masters. kwok
// stands in for every kubelet at once, which no Node-authorizer identity
// covers: it is in system:masters too, and so is the device-plugin
// simulator, which writes node status as the kubelets' device managers do.
var clientIdentities = map[string]struct {
	user   string
	groups []string
}{
	"admin":                   {"gpu-testbed-admin", []string{"system:masters"}},
	"kube-controller-manager": {"system:kube-controller-manager", []string{"system:masters"}},
	"kube-scheduler":          {"system:kube-scheduler", nil},
	"kwok":                    {"kwok", []string{"system:masters"}},
	"device-plugin-simulator": {"gpu-testbed-device-plugin-simulator", []string{"system:masters"}},
}

// frontProxyClientName is the name kube-apiserver requires of the client
// certificate that asserts users in request headers.
const frontProxyClientName = "front-proxy-client"

// serviceClusterIPRange is an address range written into Service objects
// only; nothing routes it.
const (
	serviceClusterIPRange = "10.96.0.0/16"
	kubernetesServiceIP   = "10.96.0.1"
)

// credentials are the files and client certificates of the cluster, all
// signed by the testbed's CA but the front proxy's.
type credentials struct {
	caPEM  []byte
	caFile string

	apiServerCertFile, apiServerKeyFile   string
	etcdServerCertFile, etcdServerKeyFile string
	etcdClientCertFile, etcdClientKeyFile string // kube-apiserver's, to reach etcd
	etcdClient                            testbed.KeyPair

	// The front proxy (aggregation layer): the CA that vouches for
	// request-header authentication, and kube-apiserver's client
	// certificate towards aggregated API servers.
	frontProxyCAFile                                  string
	frontProxyClientCertFile, frontProxyClientKeyFile string

	serviceAccountKeyFile, serviceAccountPublicKeyFile string

	clients map[string]testbed.KeyPair // by component: see clientIdentities
}

// writeCredentials issues the serving and client certificates from the
// testbed's CA, generates the front proxy's CA and the service account
// key, and writes what the processes read into dir.
func writeCredentials(dir string, ca *testbed.Authority, caFile string) (*credentials, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the Kubernetes PKI directory: %w", err)
	}
	loopback := []net.IP{net.ParseIP("127.0.0.1")}

	apiServer, err := ca.ServingPair("kube-apiserver",
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		append(loopback, net.ParseIP(kubernetesServiceIP)))
	if err != nil {
		return nil, err
	}
	etcdServer, err := ca.ServingPair("etcd", []string{"localhost"}, loopback, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	etcdClient, err := ca.ClientPair("kube-apiserver-etcd-client")
	if err != nil {
		return nil, err
	}
	// A separate CA for the front proxy, as kubeadm does: only certificates
	// it signs (and named front-proxy-client) may assert a user in headers.
	frontProxyCA, err := testbed.NewAuthority("gpu-testbed-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	frontProxyClient, err := frontProxyCA.ClientPair(frontProxyClientName)
	if err != nil {
		return nil, err
	}
	saPrivate, saPublic, err := serviceAccountKeyPair()
	if err != nil {
		return nil, err
	}

	c := &credentials{caPEM: ca.CertPEM(), caFile: caFile, etcdClient: etcdClient, clients: map[string]testbed.KeyPair{}}
	files := []struct {
		target  *string
		name    string
		content []byte
	}{
		{&c.apiServerCertFile, "apiserver.crt", apiServer.CertPEM},
		{&c.apiServerKeyFile, "apiserver.key", apiServer.KeyPEM},
		{&c.etcdServerCertFile, "etcd-server.crt", etcdServer.CertPEM},
		{&c.etcdServerKeyFile, "etcd-server.key", etcdServer.KeyPEM},
		{&c.etcdClientCertFile, "apiserver-etcd-client.crt", etcdClient.CertPEM},
		{&c.etcdClientKeyFile, "apiserver-etcd-client.key", etcdClient.KeyPEM},
		{&c.frontProxyCAFile, "front-proxy-ca.crt", frontProxyCA.CertPEM()},
		{&c.frontProxyClientCertFile, "front-proxy-client.crt", frontProxyClient.CertPEM},
		{&c.frontProxyClientKeyFile, "front-proxy-client.key", frontProxyClient.KeyPEM},
		{&c.serviceAccountKeyFile, "sa.key", saPrivate},
		{&c.serviceAccountPublicKeyFile, "sa.pub", saPublic},
	}
	for _, f := range files {
		*f.target = filepath.Join(dir, f.name)
		if err := os.WriteFile(*f.target, f.content, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.name, err)
		}
	}
	for component, id := range clientIdentities {
		pair, err := ca.ClientPair(id.user, id.groups...)
		if err != nil {
			return nil, err
		}
		c.clients[component] = pair
	}
	return c, nil
}

// serviceAccountKeyPair generates the RSA key kube-apiserver signs service
// account tokens with, returning the private and the public key as PEM.
func serviceAccountKeyPair() (privatePEM, publicPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the service account key: %w", err)
	}
	privateDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the service account key: %w", err)
	}
	publicDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the service account public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privateDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: publicDER}), nil
}
