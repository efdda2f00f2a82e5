package kube

// TLS failures that the testbed's API server cannot produce, against
// httptest servers: an expired serving certificate, a handshake the server
// refuses for want of an acceptable client certificate, and a server that
// does not speak TLS at all. Each error names the setting to fix.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// selfSignedCA is a CA whose certificates the tests issue with any
// validity: testbed.Authority issues only valid ones.
type selfSignedCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  string
}

func newSelfSignedCA(t *testing.T, name string) *selfSignedCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &selfSignedCA{cert: cert, key: key, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// serving issues a serving certificate for 127.0.0.1 valid from notBefore
// to notAfter.
func (ca *selfSignedCA) serving(t *testing.T, name string, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca.cert, key.Public(), ca.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// tlsServer serves 404s over TLS with config.
func tlsServer(t *testing.T, config *tls.Config) *httptest.Server {
	t.Helper()
	server := httptest.NewUnstartedServer(http.NotFoundHandler())
	server.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	server.TLS = config
	server.StartTLS()
	t.Cleanup(server.Close)
	return server
}

func TestCredentialsExpiredServerCertificateSaysSo(t *testing.T) {
	ca := newSelfSignedCA(t, "expiry-ca")
	expiredAt := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
	server := tlsServer(t, &tls.Config{Certificates: []tls.Certificate{ca.serving(t, "stale-apiserver", expiredAt.Add(-time.Hour), expiredAt)}})

	err := listNodes(connectSettings(t, ConnectionSettings{Host: server.URL, ClusterCACertificate: ca.pem, Token: "t"}, nil))
	var rejected *CredentialsError
	require.ErrorAs(t, err, &rejected)
	require.ErrorContains(t, err, "the Kubernetes API server "+server.URL+` presented a certificate that is not valid now: "CN=stale-apiserver" (expired `+
		expiredAt.UTC().Format(time.RFC3339)+")")
	require.ErrorContains(t, err, `in use: CA "CN=expiry-ca" from kubernetes.cluster_ca_certificate.`)
	require.ErrorContains(t, err, "Renew the API server's certificate, or correct this machine's clock if it is wrong")
}

func TestCredentialsHandshakeRefusedNamesTheClientCertificate(t *testing.T) {
	ca := newSelfSignedCA(t, "strict-ca")
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(ca.cert) // the server accepts client certificates of its own CA only
	server := tlsServer(t, &tls.Config{
		Certificates: []tls.Certificate{ca.serving(t, "strict-apiserver", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCAs,
	})
	intruder := clientPair(t)

	err := listNodes(connectSettings(t, ConnectionSettings{
		Host: server.URL, ClusterCACertificate: ca.pem, ClientCertificate: string(intruder.CertPEM), ClientKey: string(intruder.KeyPEM),
	}, nil))
	var rejected *CredentialsError
	require.ErrorAs(t, err, &rejected)
	require.ErrorContains(t, err, "the Kubernetes API server "+server.URL+" refused the TLS handshake")
	require.ErrorContains(t, err, `in use: client certificate "CN=intruder" from kubernetes.client_certificate.`)
	require.ErrorContains(t, err, "Fix kubernetes.client_certificate and kubernetes.client_key: the server refuses a client certificate")
	require.NotContains(t, err.Error(), string(intruder.KeyPEM))

	err = listNodes(connectSettings(t, ConnectionSettings{}, map[string]string{EnvHost: server.URL, EnvClusterCACertificate: ca.pem, EnvToken: "t"}))
	require.ErrorAs(t, err, &rejected)
	require.ErrorContains(t, err, "refused the TLS handshake; in use: token from KUBE_TOKEN.")
	require.ErrorContains(t, err, "Set kubernetes.client_certificate and kubernetes.client_key (or KUBE_CLIENT_CERT_DATA and KUBE_CLIENT_KEY_DATA): the server asks for a client certificate")
}

func TestCredentialsServerWithoutTLSNamesTheHost(t *testing.T) {
	plain := k8s.NewPlainHTTPTrap(t)
	host := "https://" + plain.Server.Listener.Addr().String()
	err := listNodes(connectSettings(t, ConnectionSettings{Host: host, Token: "t"}, nil))
	var rejected *CredentialsError
	require.ErrorAs(t, err, &rejected)
	require.ErrorContains(t, err, "the server at "+host+" does not speak TLS; in use: server "+host+" from kubernetes.host.")
	require.ErrorContains(t, err, "Fix kubernetes.host: a server that serves plain HTTP has an http:// URL")
	require.Zero(t, plain.Credentials.Load(), "nothing readable reached the plain server")
}
