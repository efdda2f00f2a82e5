package testbed

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCertificatesChainToTheTestbedCA(t *testing.T) {
	ca, err := NewAuthority("test-ca")
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ca.CertPEM()))

	serving, err := ca.ServingPair("kube-apiserver", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	require.NoError(t, err)
	cert := parseCertificate(t, serving.CertPEM)
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	require.NoError(t, err)
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.Error(t, err, "a serving certificate is not a client certificate")

	client, err := ca.ClientPair("gpu-testbed-admin", "system:masters")
	require.NoError(t, err)
	cert = parseCertificate(t, client.CertPEM)
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	require.Equal(t, "gpu-testbed-admin", cert.Subject.CommonName)
	require.Equal(t, []string{"system:masters"}, cert.Subject.Organization)
}

func parseCertificate(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert
}
