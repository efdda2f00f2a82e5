package testbed

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// certificateLifetime is long enough for a demo testbed left running.
const certificateLifetime = 365 * 24 * time.Hour

// KeyPair is a PEM certificate and its PEM private key.
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// Authority is a throwaway certificate authority. Every testbed has one
// (Host.CA) that signs the certificates of all its backends; a backend may
// make more for trust domains of its own (kube-apiserver's front proxy).
type Authority struct {
	cert *x509.Certificate
	key  crypto.Signer
	pair KeyPair
}

// NewAuthority makes a CA with a new key and a self-signed certificate.
func NewAuthority(commonName string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	template, err := certificateTemplate(commonName)
	if err != nil {
		return nil, err
	}
	template.IsCA = true
	template.BasicConstraintsValid = true
	template.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-signing the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the CA certificate: %w", err)
	}
	keyPEM, err := privateKeyPEM(key)
	if err != nil {
		return nil, err
	}
	return &Authority{cert: cert, key: key, pair: KeyPair{CertPEM: certificatePEM(der), KeyPEM: keyPEM}}, nil
}

// ServingPair issues a TLS server certificate for the given names and
// addresses. extraUsages adds usages, such as client auth for etcd, whose
// gRPC gateway presents its serving certificate to etcd itself.
func (ca *Authority) ServingPair(commonName string, dnsNames []string, ips []net.IP, extraUsages ...x509.ExtKeyUsage) (KeyPair, error) {
	template, err := certificateTemplate(commonName)
	if err != nil {
		return KeyPair{}, err
	}
	template.DNSNames = dnsNames
	template.IPAddresses = ips
	template.ExtKeyUsage = append([]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, extraUsages...)
	return ca.issue(template)
}

// ClientPair issues a client certificate; Kubernetes takes the common name
// as the user name and the organizations as its groups.
func (ca *Authority) ClientPair(user string, groups ...string) (KeyPair, error) {
	template, err := certificateTemplate(user)
	if err != nil {
		return KeyPair{}, err
	}
	template.Subject.Organization = groups
	template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.issue(template)
}

// CertPEM is the CA's certificate, PEM-encoded: what clients trust.
func (ca *Authority) CertPEM() []byte { return ca.pair.CertPEM }

func (ca *Authority) issue(template *x509.Certificate) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("generating a key for %s: %w", template.Subject.CommonName, err)
	}
	template.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, key.Public(), ca.key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("signing the certificate of %s: %w", template.Subject.CommonName, err)
	}
	keyPEM, err := privateKeyPEM(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{CertPEM: certificatePEM(der), KeyPEM: keyPEM}, nil
}

func certificateTemplate(commonName string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-time.Hour), // tolerate clock skew
		NotAfter:     now.Add(certificateLifetime),
	}, nil
}

func certificatePEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func privateKeyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding a private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
