package kube

// This file says, without any secret, which settings a connection uses and
// where each came from: an attribute of the provider's `kubernetes` block,
// a KUBE_* environment variable, a user and cluster of a kubeconfig file,
// or the in-cluster service account. An authentication or TLS failure
// (auth_errors.go) is explained from it, so that its message names the
// setting to fix and what was tried. A description may name a file, a
// kubeconfig user, an exec plugin's command or a certificate's subject and
// expiry; it never holds a token, a password or a key.

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// settingUse is one setting a connection uses: use says what it is and
// where it came from ("token from KUBE_TOKEN"), fix names what to change
// ("KUBE_TOKEN").
type settingUse struct{ use, fix string }

// credentialKinds are the kinds of credentials a connection sends.
type credentialKinds struct {
	token, clientCert, basic, exec, authProvider bool
	// tokenSource: a token from ConnectionSettings.TokenSource.
	tokenSource bool
}

func (k credentialKinds) none() bool {
	return !k.token && !k.clientCert && !k.basic && !k.exec && !k.authProvider && !k.tokenSource
}

// origin is where a connection's server, credentials and CA came from.
type origin struct {
	server      settingUse
	credentials settingUse
	kinds       credentialKinds
	// clientCertFix names the settings that would give the connection a
	// client certificate.
	clientCertFix string
	ca            settingUse
	// tlsServerName is the name the server's certificate is checked
	// against instead of the server's host, when one is set.
	tlsServerName string
	// alternative is another way out, for the end of any fix: choosing
	// another kubeconfig context.
	alternative string
}

// explicitOrigin describes a connection built from kubernetes.host and
// its companions: name(attr) says where attr's value came from
// ("kubernetes.token" or "KUBE_TOKEN").
func explicitOrigin(s ConnectionSettings, name func(attr string) string) origin {
	// An unset setting may be given either way.
	const (
		unsetClientCert = "kubernetes.client_certificate and kubernetes.client_key (or " + EnvClientCertificate + " and " + EnvClientKey + ")"
		unsetToken      = "kubernetes.token (or " + EnvToken + ")"
		unsetCA         = "kubernetes.cluster_ca_certificate (or " + EnvClusterCACertificate + ")"
	)
	o := origin{server: settingUse{redactedHost(s.Host) + " from " + name("host"), name("host")}, clientCertFix: unsetClientCert}
	if s.ClientCertificate != "" {
		o.clientCertFix = name("client_certificate") + " and " + name("client_key")
	}
	var uses, fixes []string
	if s.Token != "" {
		o.kinds.token = true
		uses = append(uses, "token from "+name("token"))
		fixes = append(fixes, name("token"))
	}
	if s.TokenSource != nil {
		o.kinds.tokenSource = true
		uses = append(uses, describeTokenSource(s.TokenSource)+" from kubernetes.eks")
		fixes = append(fixes, "the AWS credentials kubernetes.eks mints the token with, or the cluster's access for their IAM identity")
	}
	if s.ClientCertificate != "" {
		o.kinds.clientCert = true
		uses = append(uses, "client certificate "+describeCertificatesPEM([]byte(s.ClientCertificate))+" from "+name("client_certificate"))
		fixes = append(fixes, name("client_certificate")+" and "+name("client_key"))
	}
	if len(uses) == 0 {
		o.credentials = settingUse{
			"no credentials (neither kubernetes.token nor kubernetes.client_certificate is set)",
			unsetToken + ", or " + unsetClientCert,
		}
	} else {
		o.credentials = settingUse{strings.Join(uses, " and "), strings.Join(fixes, ", ")}
	}
	switch {
	case s.Insecure:
		o.ca = settingUse{"no verification of the server's certificate (" + name("insecure") + ")", name("insecure")}
	case s.ClusterCACertificate != "":
		o.ca = settingUse{"CA " + describeCertificatesPEM([]byte(s.ClusterCACertificate)) + " from " + name("cluster_ca_certificate"), name("cluster_ca_certificate")}
	default:
		o.ca = settingUse{"the system's trusted CAs (kubernetes.cluster_ca_certificate is not set)", unsetCA}
	}
	return o
}

// kubeconfigSource is the kubeconfig a connection was loaded from.
type kubeconfigSource struct {
	// files names the file(s) read, e.g. "/home/u/.kube/config", or
	// KUBECONFIG's list.
	files string
	// chosenBy is what chose them: "kubernetes.config_path",
	// "KUBE_CONFIG_PATH", "KUBECONFIG" or "the default location".
	chosenBy string
	// contextName is the context used, and contextFrom what chose it:
	// "kubernetes.config_context", "KUBE_CTX" or "current-context".
	contextName, contextFrom string
	// insecureFrom names kubernetes.insecure or KUBE_INSECURE when either
	// turned verification off; empty otherwise.
	insecureFrom string
}

// kubeconfigOrigin describes a connection loaded from the context of a
// kubeconfig: raw is the merged kubeconfig, cfg what client-go made of it.
func kubeconfigOrigin(raw clientcmdapi.Config, src kubeconfigSource, cfg *rest.Config) origin {
	kubeContext := raw.Contexts[src.contextName]
	if kubeContext == nil {
		kubeContext = &clientcmdapi.Context{}
	}
	cluster := raw.Clusters[kubeContext.Cluster]
	if cluster == nil {
		cluster = &clientcmdapi.Cluster{}
	}
	user := raw.AuthInfos[kubeContext.AuthInfo]
	if user == nil {
		user = &clientcmdapi.AuthInfo{}
	}
	// in names the file an object of the kubeconfig came from, which the
	// loader records; where several files merge, each object has its own.
	in := func(location string) string {
		if location == "" {
			return src.files
		}
		return location
	}
	contextPhrase := fmt.Sprintf("context %q (%s)", src.contextName, src.contextFrom)
	clusterPhrase := fmt.Sprintf("cluster %q of %s in kubeconfig %s (%s)", kubeContext.Cluster, contextPhrase, in(cluster.LocationOfOrigin), src.chosenBy)
	userPhrase := fmt.Sprintf("user %q of %s in kubeconfig %s (%s)", kubeContext.AuthInfo, contextPhrase, in(user.LocationOfOrigin), src.chosenBy)
	o := origin{tlsServerName: cluster.TLSServerName, alternative: "or choose another context with kubernetes.config_context"}
	serverFix := fmt.Sprintf("the server of cluster %q in kubeconfig %s", kubeContext.Cluster, in(cluster.LocationOfOrigin))
	if cluster.TLSServerName != "" {
		serverFix += " or its tls-server-name"
	}
	o.server = settingUse{redactedHost(cfg.Host) + " from " + clusterPhrase, serverFix}

	// The user as the kubeconfig writes it (its paths made absolute by
	// the loader), not as client-go applied it: client-go leaves a user's
	// credentials out of the configuration of a plain-HTTP server.
	var uses []string
	switch {
	case user.Token != "":
		o.kinds.token = true
		uses = append(uses, "token")
	case user.TokenFile != "":
		o.kinds.token = true
		uses = append(uses, "token file "+user.TokenFile)
	}
	if len(user.ClientCertificateData) > 0 || user.ClientCertificate != "" {
		o.kinds.clientCert = true
		uses = append(uses, "client certificate "+describeCertificateSource(user.ClientCertificateData, user.ClientCertificate))
	}
	if user.Username != "" || user.Password != "" {
		o.kinds.basic = true
		uses = append(uses, fmt.Sprintf("username %q and password", user.Username))
	}
	if user.Exec != nil {
		o.kinds.exec = true
		uses = append(uses, fmt.Sprintf("credentials of exec plugin %q", user.Exec.Command))
	}
	if user.AuthProvider != nil {
		o.kinds.authProvider = true
		uses = append(uses, fmt.Sprintf("auth provider %q", user.AuthProvider.Name))
	}
	userFix := fmt.Sprintf("user %q in kubeconfig %s", kubeContext.AuthInfo, in(user.LocationOfOrigin))
	if len(uses) == 0 {
		o.credentials = settingUse{"no credentials: " + userPhrase + " has none", userFix}
	} else {
		o.credentials = settingUse{strings.Join(uses, " and ") + " of " + userPhrase, userFix}
	}
	o.clientCertFix = "client-certificate-data and client-key-data of " + userFix

	caFix := fmt.Sprintf("certificate-authority-data of cluster %q in kubeconfig %s", kubeContext.Cluster, in(cluster.LocationOfOrigin))
	switch {
	case src.insecureFrom != "":
		o.ca = settingUse{"no verification of the server's certificate (" + src.insecureFrom + ")", src.insecureFrom}
	case cfg.Insecure:
		o.ca = settingUse{"no verification of the server's certificate (insecure-skip-tls-verify of " + clusterPhrase + ")", caFix}
	case len(cfg.CAData) > 0:
		o.ca = settingUse{"CA " + describeCertificatesPEM(cfg.CAData) + " from certificate-authority-data of " + clusterPhrase, caFix}
	case cfg.CAFile != "":
		o.ca = settingUse{"CA file " + cfg.CAFile + " from certificate-authority of " + clusterPhrase, caFix}
	default:
		o.ca = settingUse{"the system's trusted CAs (" + clusterPhrase + " sets no certificate-authority)", caFix}
	}
	return o
}

// inClusterOrigin describes the in-cluster service account's connection.
func inClusterOrigin(cfg *rest.Config) origin {
	const fix = "the pod's service account (or set kubernetes.host or kubernetes.config_path to leave the in-cluster configuration)"
	return origin{
		server:        settingUse{redactedHost(cfg.Host) + " from KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (in-cluster)", "KUBERNETES_SERVICE_HOST"},
		credentials:   settingUse{"service account token file " + cfg.BearerTokenFile + " (in-cluster)", fix},
		kinds:         credentialKinds{token: true},
		clientCertFix: "kubernetes.client_certificate and kubernetes.client_key with kubernetes.host",
		ca:            settingUse{"CA file " + cfg.CAFile + " (in-cluster)", fix},
	}
}

// configOrigin describes a connection from its client configuration alone,
// for a Cluster connected without ConnectionSettings (tests, tools).
func configOrigin(cfg *rest.Config) origin {
	const fix = "the client configuration's credentials"
	o := origin{server: settingUse{redactedHost(cfg.Host), "the client configuration's host"}, tlsServerName: cfg.ServerName, clientCertFix: fix}
	var uses []string
	if cfg.BearerToken != "" || cfg.BearerTokenFile != "" {
		o.kinds.token = true
		uses = append(uses, "bearer token")
	}
	if len(cfg.CertData) > 0 || cfg.CertFile != "" {
		o.kinds.clientCert = true
		uses = append(uses, "client certificate "+describeCertificateSource(cfg.CertData, cfg.CertFile))
	}
	if cfg.Username != "" || cfg.Password != "" {
		o.kinds.basic = true
		uses = append(uses, "username and password")
	}
	if cfg.ExecProvider != nil {
		o.kinds.exec = true
		uses = append(uses, fmt.Sprintf("credentials of exec plugin %q", cfg.ExecProvider.Command))
	}
	if cfg.AuthProvider != nil {
		o.kinds.authProvider = true
		uses = append(uses, fmt.Sprintf("auth provider %q", cfg.AuthProvider.Name))
	}
	if len(uses) == 0 {
		o.credentials = settingUse{"no credentials", fix}
	} else {
		o.credentials = settingUse{strings.Join(uses, " and "), fix}
	}
	switch {
	case cfg.Insecure:
		o.ca = settingUse{"no verification of the server's certificate", "the client configuration's CA"}
	case len(cfg.CAData) > 0:
		o.ca = settingUse{"CA " + describeCertificatesPEM(cfg.CAData), "the client configuration's CA"}
	case cfg.CAFile != "":
		o.ca = settingUse{"CA file " + cfg.CAFile, "the client configuration's CA"}
	default:
		o.ca = settingUse{"the system's trusted CAs", "the client configuration's CA"}
	}
	return o
}

// redactedHost is a server URL with the password of any user information
// in it replaced by "xxxxx", for messages.
func redactedHost(host string) string {
	u, err := url.Parse(host)
	if err != nil || u.User == nil {
		return host
	}
	return u.Redacted()
}

// describeCertificateSource describes a certificate given as PEM data or,
// when data is empty, as the path of a PEM file.
func describeCertificateSource(data []byte, file string) string {
	if len(data) > 0 {
		return describeCertificatesPEM(data)
	}
	read, err := os.ReadFile(file)
	if err != nil {
		return "file " + file
	}
	return describeCertificatesPEM(read) + " (file " + file + ")"
}

// describeCertificatesPEM names the first certificate of a PEM bundle by
// its subject, says when it has expired or is not valid yet, and counts
// the others: `"CN=gpu-testbed-ca"`, `"CN=admin,O=system:masters"
// (expired 2024-01-02T03:04:05Z)`, `"CN=root-a" and 2 more`. What does
// not parse is described as such.
func describeCertificatesPEM(data []byte) string {
	var certs []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return "(a PEM certificate that does not parse: " + err.Error() + ")"
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return "(no PEM certificate)"
	}
	described := describeCertificate(certs[0])
	if len(certs) > 1 {
		described += fmt.Sprintf(" and %d more", len(certs)-1)
	}
	return described
}

// describeCertificate is a certificate's subject, with its validity when
// it is not valid now.
func describeCertificate(cert *x509.Certificate) string {
	described := fmt.Sprintf("%q", cert.Subject.String())
	now := time.Now()
	switch {
	case now.After(cert.NotAfter):
		described += " (expired " + cert.NotAfter.UTC().Format(time.RFC3339) + ")"
	case now.Before(cert.NotBefore):
		described += " (not valid before " + cert.NotBefore.UTC().Format(time.RFC3339) + ")"
	}
	return described
}
