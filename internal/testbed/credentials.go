package testbed

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
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

// serviceClusterIPRange is an address range written into Service objects
// only; nothing routes it.
const frontProxyClientName = "front-proxy-client"

const (
	serviceClusterIPRange = "10.96.0.0/16"
	kubernetesServiceIP   = "10.96.0.1"
)

// credentials are the files and client certificates of one testbed, all
// signed by its own CA.
type credentials struct {
	caPEM  []byte
	caFile string

	apiServerCertFile, apiServerKeyFile   string
	etcdServerCertFile, etcdServerKeyFile string
	etcdClientCertFile, etcdClientKeyFile string // kube-apiserver's, to reach etcd
	etcdClient                            keyPair

	// The front proxy (aggregation layer): the CA that vouches for
	// request-header authentication, and kube-apiserver's client
	// certificate towards aggregated API servers.
	frontProxyCAFile                                  string
	frontProxyClientCertFile, frontProxyClientKeyFile string

	serviceAccountKeyFile, serviceAccountPublicKeyFile string

	clients map[string]keyPair // by component: see clientIdentities
}

// writeCredentials generates the CA, the serving and client certificates
// and the service account key, and writes what the processes read into dir.
func writeCredentials(dir string) (*credentials, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the PKI directory: %w", err)
	}
	ca, err := newAuthority("gpu-testbed-ca")
	if err != nil {
		return nil, err
	}
	loopback := []net.IP{net.ParseIP("127.0.0.1")}

	apiServer, err := ca.servingPair("kube-apiserver",
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		append(loopback, net.ParseIP(kubernetesServiceIP)))
	if err != nil {
		return nil, err
	}
	etcdServer, err := ca.servingPair("etcd", []string{"localhost"}, loopback, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	etcdClient, err := ca.clientPair("kube-apiserver-etcd-client")
	if err != nil {
		return nil, err
	}
	// A separate CA for the front proxy, as kubeadm does: only certificates
	// it signs (and named front-proxy-client) may assert a user in headers.
	frontProxyCA, err := newAuthority("gpu-testbed-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	frontProxyClient, err := frontProxyCA.clientPair(frontProxyClientName)
	if err != nil {
		return nil, err
	}
	saPrivate, saPublic, err := serviceAccountKeyPair()
	if err != nil {
		return nil, err
	}

	c := &credentials{caPEM: ca.pair.CertPEM, etcdClient: etcdClient, clients: map[string]keyPair{}}
	files := []struct {
		target  *string
		name    string
		content []byte
	}{
		{&c.caFile, "ca.crt", ca.pair.CertPEM},
		{&c.apiServerCertFile, "apiserver.crt", apiServer.CertPEM},
		{&c.apiServerKeyFile, "apiserver.key", apiServer.KeyPEM},
		{&c.etcdServerCertFile, "etcd-server.crt", etcdServer.CertPEM},
		{&c.etcdServerKeyFile, "etcd-server.key", etcdServer.KeyPEM},
		{&c.etcdClientCertFile, "apiserver-etcd-client.crt", etcdClient.CertPEM},
		{&c.etcdClientKeyFile, "apiserver-etcd-client.key", etcdClient.KeyPEM},
		{&c.frontProxyCAFile, "front-proxy-ca.crt", frontProxyCA.pair.CertPEM},
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
		pair, err := ca.clientPair(id.user, id.groups...)
		if err != nil {
			return nil, err
		}
		c.clients[component] = pair
	}
	return c, nil
}
