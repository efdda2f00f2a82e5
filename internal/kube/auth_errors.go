package kube

// This file turns a failure of the connection's credentials or TLS
// settings into an error that names the setting to fix: the API server's
// 401, a server certificate this client cannot verify (unknown authority,
// wrong host name, expired), a TLS handshake the server refused, a server
// that does not speak TLS, and credentials this client will not send over
// plain HTTP. Which settings were in use comes from the connection's
// origin (auth_origin.go); no message holds a secret.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// CredentialsError is a request that failed because of the connection's
// credentials or TLS settings, not because the API server is unreachable:
// waits end on it at once instead of retrying. Its text reads, e.g.:
//
//	the Kubernetes API server https://10.0.0.1:6443 rejected the credentials (HTTP 401 Unauthorized); in use: token from KUBE_TOKEN. Fix KUBE_TOKEN: ...
//
// A 401 reaches callers as the API server's Status error with this text as
// its message (apierrors.IsUnauthorized still holds); the other kinds as
// the request's error, wrapping this one.
type CredentialsError struct {
	// Server is the API server's URL (scheme, host and port).
	Server string
	// Problem says what happened.
	Problem string
	// InUse says which settings were in use and where they came from.
	InUse string
	// Fix names the setting to change, and how.
	Fix string
	// Alternative is another way out, e.g. choosing another kubeconfig
	// context; may be empty.
	Alternative string
	// Err is the TLS or x509 error behind it; nil for a 401 or a refusal
	// to send credentials over plain HTTP.
	Err error
	// sent is whether the request reached the server: false for a refusal
	// to send credentials over plain HTTP.
	sent bool
}

// Error reads "<problem>; in use: <settings>. <fix>[; <alternative>].
// (<TLS error>)".
func (e *CredentialsError) Error() string {
	msg := e.Problem + "; in use: " + e.InUse + ". " + strings.TrimSuffix(e.Fix, ".")
	if e.Alternative != "" {
		msg += "; " + e.Alternative
	}
	msg += "."
	if e.Err != nil {
		msg += " (" + e.Err.Error() + ")"
	}
	return msg
}

// Unwrap returns the TLS or x509 error behind e, if any.
func (e *CredentialsError) Unwrap() error { return e.Err }

// serverOf is the scheme://host[:port] of u.
func serverOf(u *url.URL) string { return u.Scheme + "://" + u.Host }

// plaintextCredentialsError is the refusal to send o's credentials to
// server, a plain-HTTP URL.
func plaintextCredentialsError(o origin, server string) *CredentialsError {
	return &CredentialsError{
		Server:      server,
		Alternative: o.alternative,
		Problem: "refusing to send credentials to the Kubernetes API server " + server +
			" over plain HTTP, where anyone on the network path can read them",
		InUse: o.credentials.use + "; server " + o.server.use,
		Fix: "Use an https:// URL in " + o.server.fix +
			", or set kubernetes.allow_plaintext_credentials = true in the provider block to send credentials over plain HTTP anyway (only on a network you trust)",
	}
}

// kubeconfigPlaintextError is the refusal of a kubeconfig whose user has
// credentials (described by o) and whose server is server, a plain-HTTP
// URL. client-go would leave the credentials out of every request, so
// they would not leak, but the requests would go as system:anonymous; the
// opt-in does not change that.
func kubeconfigPlaintextError(o origin, server string) *CredentialsError {
	return &CredentialsError{
		Server:      server,
		Alternative: o.alternative,
		Problem: "the Kubernetes API server " + server + " is plain HTTP, and client-go never sends a kubeconfig user's credentials " +
			"over plain HTTP (not even with kubernetes.allow_plaintext_credentials): every request would go without them, as system:anonymous",
		InUse: o.credentials.use + "; server " + o.server.use,
		Fix: "Use an https:// URL in " + o.server.fix + ", or remove the credentials of " + o.credentials.fix +
			" to use the server anonymously, or give the server and token as kubernetes.host and kubernetes.token with kubernetes.allow_plaintext_credentials = true",
	}
}

// unauthorizedError explains the API server's 401 to a request with o's
// credentials.
func unauthorizedError(o origin, server string) *CredentialsError {
	var advice []string
	k := o.kinds
	if k.none() {
		advice = append(advice, "no credentials were sent, and this API server refuses anonymous requests")
	}
	if k.token {
		advice = append(advice, "the API server rejects a token that is wrong, expired or revoked (a service account's token stops working once the service account is deleted)")
	}
	if k.tokenSource {
		advice = append(advice, "EKS answers 401 for a token whose IAM identity has no access entry (or aws-auth mapping) on the cluster, "+
			"for a token minted for another cluster, and when this machine's clock is off (a token is valid for 15 minutes from its signing time)")
	}
	if k.clientCert {
		advice = append(advice, "the API server rejects a client certificate that its client CA did not sign, or that has expired")
	}
	if k.basic {
		advice = append(advice, "the API server rejects a wrong username or password (and most clusters accept no passwords at all)")
	}
	if k.exec {
		advice = append(advice, "the exec plugin's credentials were rejected: run its command by hand to see what it returns")
	}
	if k.authProvider {
		advice = append(advice, "the auth provider's token was rejected")
	}
	verb := "Fix "
	if k.none() {
		verb = "Set "
	}
	return &CredentialsError{
		Server:      server,
		Problem:     "the Kubernetes API server " + server + " rejected the credentials (HTTP 401 Unauthorized)",
		InUse:       o.credentials.use,
		Fix:         verb + o.credentials.fix + ": " + strings.Join(advice, "; "),
		Alternative: o.alternative,
		sent:        true,
	}
}

// tlsError explains err, the failure of a request to server with o's
// settings, when it is a TLS or certificate failure; otherwise it returns
// nil.
func tlsError(o origin, server string, err error) *CredentialsError {
	e := &CredentialsError{Server: server, Alternative: o.alternative, Err: err, sent: true}
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		verification     *tls.CertificateVerificationError
		notTLS           tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknownAuthority):
		issuer := "an unknown issuer"
		if unknownAuthority.Cert != nil {
			issuer = fmt.Sprintf("%q", unknownAuthority.Cert.Issuer.String())
		}
		e.Problem = "the Kubernetes API server " + server + " presented a certificate issued by " + issuer + ", which the CA in use does not vouch for"
		e.InUse = o.ca.use
		e.Fix = "Set " + o.ca.fix + " to the PEM of the CA that signed the API server's certificate"
	case errors.As(err, &hostname):
		e.Problem = "the Kubernetes API server " + server + " presented a certificate for " + certificateNames(hostname.Certificate) +
			", not for " + fmt.Sprintf("%q", hostname.Host)
		e.InUse = "server " + o.server.use
		if o.tlsServerName != "" {
			e.InUse += fmt.Sprintf(", checked as tls-server-name %q", o.tlsServerName)
		}
		e.Fix = "Set " + o.server.fix + " to a name or address the certificate is valid for (or have the API server's certificate list " +
			fmt.Sprintf("%q", hostname.Host) + ")"
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		e.Problem = "the Kubernetes API server " + server + " presented a certificate that is not valid now: " + describeCertificate(invalid.Cert)
		e.InUse = o.ca.use
		e.Fix = "Renew the API server's certificate, or correct this machine's clock if it is wrong: no provider setting makes it valid (" +
			o.ca.fix + " only chooses the CA it is checked against)"
	case errors.As(err, &invalid), errors.As(err, &verification):
		e.Problem = "the Kubernetes API server " + server + " presented a certificate that does not verify against the CA in use"
		e.InUse = o.ca.use
		e.Fix = "Check " + o.ca.fix + " and the API server's certificate"
	case errors.As(err, &notTLS):
		e.Problem = "the server at " + server + " does not speak TLS"
		e.InUse = "server " + o.server.use
		e.Fix = "Fix " + o.server.fix + ": a server that serves plain HTTP has an http:// URL, and then credentials are refused unless kubernetes.allow_plaintext_credentials = true"
	case isRemoteTLSAlert(err):
		e.Problem = "the Kubernetes API server " + server + " refused the TLS handshake"
		e.InUse = o.credentials.use
		if o.kinds.clientCert {
			e.Fix = "Fix " + o.credentials.fix + ": the server refuses a client certificate that its client CA did not sign, that has expired, or that it does not accept"
		} else {
			e.Fix = "Set " + o.clientCertFix + ": the server asks for a client certificate"
		}
	default:
		return nil
	}
	return e
}

// isRemoteTLSAlert reports whether err is a TLS alert the server sent, as
// crypto/tls reports it: a *net.OpError whose Op is "remote error" (e.g.
// "remote error: tls: certificate required").
func isRemoteTLSAlert(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		return true
	}
	// Some transports (HTTP/2's read loop among them) flatten the error.
	return strings.Contains(err.Error(), "remote error: tls: ")
}

// certificateNames lists the names and addresses a certificate is valid
// for, or its subject when it lists none.
func certificateNames(cert *x509.Certificate) string {
	if cert == nil {
		return "unknown names"
	}
	names := append([]string(nil), cert.DNSNames...)
	for _, ip := range cert.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		return fmt.Sprintf("%q (no subject alternative names)", cert.Subject.String())
	}
	return strings.Join(names, ", ")
}
