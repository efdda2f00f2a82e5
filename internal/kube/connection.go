package kube

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ConnectionSettings says how to reach a cluster. It mirrors the provider's
// `kubernetes` block; the zero value means "use the environment".
type ConnectionSettings struct {
	ConfigPath           string
	ConfigContext        string
	Host                 string
	Token                string
	ClusterCACertificate string
	ClientCertificate    string
	ClientKey            string
	Insecure             bool
	// AllowPlaintextCredentials lets credentials go to an http:// API
	// server (kubernetes.allow_plaintext_credentials). Off, they never do:
	// Validate and Resolve refuse such settings, and a Cluster refuses any
	// request that would carry credentials over plain HTTP. It has no
	// environment variable: the opt-in is written in the configuration.
	AllowPlaintextCredentials bool
	// TokenSource gives every request a bearer token (kubernetes.eks: an
	// EKS token minted from AWS credentials). It goes with Host and
	// ClusterCACertificate only: no token, client certificate or
	// kubeconfig, and nothing is taken from the environment.
	TokenSource TokenSource
}

// Environment variables read when the matching attribute is not set. They are
// the ones hashicorp/kubernetes reads, so existing pipelines keep working.
const (
	EnvConfigPath           = "KUBE_CONFIG_PATH"
	EnvConfigContext        = "KUBE_CTX"
	EnvHost                 = "KUBE_HOST"
	EnvToken                = "KUBE_TOKEN"
	EnvClusterCACertificate = "KUBE_CLUSTER_CA_CERT_DATA"
	EnvClientCertificate    = "KUBE_CLIENT_CERT_DATA"
	EnvClientKey            = "KUBE_CLIENT_KEY_DATA"
	EnvInsecure             = "KUBE_INSECURE"
)

// WithEnvironment fills every unset field from its KUBE_* variable. Attributes
// always win over the environment.
func (s ConnectionSettings) WithEnvironment(getenv func(string) string) (ConnectionSettings, error) {
	fill := func(field *string, env string) {
		if *field == "" {
			*field = getenv(env)
		}
	}
	if s.TokenSource != nil {
		// The token source's cluster gives the host, CA and credentials:
		// KUBE_* variables, meant for another cluster, would not fit.
		return s, nil
	}
	// A kubeconfig from the configuration is not mixed with a host from the
	// environment, nor the other way round: the configuration picks the mode.
	switch {
	case s.ConfigPath != "":
		fill(&s.ConfigContext, EnvConfigContext)
	case s.Host != "":
		fill(&s.Token, EnvToken)
		fill(&s.ClusterCACertificate, EnvClusterCACertificate)
		fill(&s.ClientCertificate, EnvClientCertificate)
		fill(&s.ClientKey, EnvClientKey)
	default:
		if getenv(EnvHost) != "" && getenv(EnvConfigPath) != "" {
			return s, fmt.Errorf("both %s and %s are set: unset one of them, or set kubernetes.host or kubernetes.config_path in the provider block", EnvHost, EnvConfigPath)
		}
		fill(&s.ConfigPath, EnvConfigPath)
		fill(&s.ConfigContext, EnvConfigContext)
		fill(&s.Host, EnvHost)
		fill(&s.Token, EnvToken)
		fill(&s.ClusterCACertificate, EnvClusterCACertificate)
		fill(&s.ClientCertificate, EnvClientCertificate)
		fill(&s.ClientKey, EnvClientKey)
	}
	if !s.Insecure {
		if v := getenv(EnvInsecure); v != "" {
			insecure, err := strconv.ParseBool(v)
			if err != nil {
				return s, fmt.Errorf("%s=%q is not a boolean: use true or false", EnvInsecure, v)
			}
			s.Insecure = insecure
		}
	}
	return s, nil
}

// SettingError is one problem with the connection settings, tied to the
// attribute of the provider's `kubernetes` block that has to change.
type SettingError struct {
	Attribute string // e.g. "host", "client_key"
	Problem   string // says what is wrong and how to fix it
}

func (e SettingError) Error() string { return "kubernetes." + e.Attribute + ": " + e.Problem }

// Validate reports settings that can never work, naming the attribute and the
// fix. It never touches the network or the filesystem. It judges the block
// as written: Resolve judges it again with the environment filled in.
func (s ConnectionSettings) Validate() []SettingError {
	return s.validate(attributeName, true)
}

// attributeName is the block attribute attr, e.g. "kubernetes.token".
func attributeName(attr string) string { return "kubernetes." + attr }

// validate reports settings that can never work; name(attr) says where
// attr's value came from. With plaintext, it also refuses credentials for
// an http:// host without the opt-in: Resolve checks that on the resolved
// client configuration instead, which knows a kubeconfig's server too.
func (s ConnectionSettings) validate(name func(attr string) string, plaintext bool) []SettingError {
	var errs []SettingError
	add := func(attr, problem string) { errs = append(errs, SettingError{attr, problem}) }
	if s.ConfigPath != "" && s.Host != "" {
		add("host", name("config_path")+" and "+name("host")+" are both set: use a kubeconfig file or an explicit host, not both")
	}
	if s.ConfigContext != "" && s.Host != "" {
		add("config_context", name("config_context")+" only applies to a kubeconfig file: remove it, or remove "+name("host"))
	}
	if s.Host != "" {
		if err := validateHost(s.Host, name("host")); err != nil {
			add("host", err.Error())
		}
	}
	// Credentials and a CA only apply to an explicit host: a kubeconfig's
	// come from its user and cluster, and would silently replace them.
	if s.ConfigPath != "" {
		for _, attr := range s.hostOnlyAttributes() {
			add(attr, name(attr)+" only applies with kubernetes.host: with a kubeconfig ("+name("config_path")+
				"), the credentials and CA come from its user and cluster and this would be ignored. Remove "+name(attr)+
				", or replace "+name("config_path")+" with kubernetes.host")
		}
	}
	if s.TokenSource != nil {
		errs = append(errs, s.validateTokenSource(name)...)
	}
	if s.ClientCertificate != "" && s.ClientKey == "" {
		add("client_key", name("client_certificate")+" is set without "+name("client_key")+": set both or neither")
	}
	if s.ClientKey != "" && s.ClientCertificate == "" {
		add("client_certificate", name("client_key")+" is set without "+name("client_certificate")+": set both or neither")
	}
	if s.Insecure && s.ClusterCACertificate != "" {
		add("insecure", name("insecure")+" = true turns off the check that "+name("cluster_ca_certificate")+" is for: remove one of them")
	}
	for _, pem := range []struct{ attr, value string }{
		{"cluster_ca_certificate", s.ClusterCACertificate},
		{"client_certificate", s.ClientCertificate},
		{"client_key", s.ClientKey},
	} {
		if pem.value != "" && !strings.Contains(pem.value, "-----BEGIN ") {
			add(pem.attr, name(pem.attr)+" is not PEM-encoded: give the PEM text (for example file(\"ca.crt\") or base64decode(var.ca_data)), not a path or base64")
		}
	}
	if plaintext && !s.AllowPlaintextCredentials && isPlainHTTP(s.Host) {
		var exposed []string
		if s.Token != "" {
			exposed = append(exposed, "the token in "+name("token")+" would travel in cleartext")
		}
		if s.TokenSource != nil {
			exposed = append(exposed, "the token ("+describeTokenSource(s.TokenSource)+") would travel in cleartext")
		}
		if s.ClientCertificate != "" || s.ClientKey != "" {
			exposed = append(exposed, "the client certificate in "+name("client_certificate")+" cannot authenticate without TLS")
		}
		if len(exposed) > 0 {
			add("host", fmt.Sprintf("%s %q is plain HTTP: %s. Use an https:// URL, or set kubernetes.allow_plaintext_credentials = true "+
				"to send credentials over plain HTTP anyway (only on a network you trust)", name("host"), s.Host, strings.Join(exposed, ", and ")))
		}
	}
	return errs
}

// validateTokenSource refuses what cannot go with a token source: a
// kubeconfig, another token or a client certificate (the request would carry
// two identities, or the kubeconfig's would be dropped), and a missing host.
func (s ConnectionSettings) validateTokenSource(name func(attr string) string) []SettingError {
	source := describeTokenSource(s.TokenSource)
	var errs []SettingError
	for _, a := range []struct{ attr, value string }{
		{"config_path", s.ConfigPath},
		{"token", s.Token},
		{"client_certificate", s.ClientCertificate},
		{"client_key", s.ClientKey},
	} {
		if a.value != "" {
			errs = append(errs, SettingError{a.attr, name(a.attr) + " cannot be used with kubernetes.eks, which gives the cluster's host, CA and token (" +
				source + "): remove " + name(a.attr) + ", or remove kubernetes.eks"})
		}
	}
	if s.Host == "" && s.ConfigPath == "" {
		errs = append(errs, SettingError{"host", "kubernetes.eks (" + source + ") needs the cluster's API server URL in kubernetes.host"})
	}
	return errs
}

// hostOnlyAttributes are the set attributes that only apply with an
// explicit host.
func (s ConnectionSettings) hostOnlyAttributes() []string {
	var attrs []string
	for _, a := range []struct{ attr, value string }{
		{"token", s.Token},
		{"client_certificate", s.ClientCertificate},
		{"client_key", s.ClientKey},
		{"cluster_ca_certificate", s.ClusterCACertificate},
	} {
		if a.value != "" {
			attrs = append(attrs, a.attr)
		}
	}
	return attrs
}

func validateHost(host, name string) error {
	u, err := url.Parse(host)
	if err == nil && u.User != nil {
		// Go would send it as basic authentication; the URL is not quoted,
		// since it holds the password.
		return fmt.Errorf("%s holds a user name or password (USER:PASSWORD@): remove it, and give credentials as kubernetes.token "+
			"or kubernetes.client_certificate and kubernetes.client_key", name)
	}
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%s %q is not a URL: write it as https://HOST[:PORT]", name, host)
	}
	return nil
}

// isPlainHTTP reports whether host is an http:// URL.
func isPlainHTTP(host string) bool {
	u, err := url.Parse(host)
	return err == nil && u.Scheme == "http"
}

// Connection is a cluster's resolved connection: the client configuration,
// where each of its settings came from (for errors that name the setting
// to fix), and whether credentials may go over plain HTTP.
type Connection struct {
	config         *rest.Config
	origin         origin
	allowPlaintext bool
	// tokens gives each request its bearer token; nil: config's own credentials.
	tokens TokenSource
}

// Connect builds a Cluster for the connection without contacting it.
func (c *Connection) Connect(opts ClusterOptions) (*Cluster, error) {
	opts.AllowPlaintextCredentials = c.allowPlaintext
	opts.tokens = c.tokens
	return connect(c.config, opts, c.origin)
}

// Resolve fills the unset settings from the environment (WithEnvironment),
// validates them, and resolves them into a Connection: an explicit host,
// then a kubeconfig file, then KUBECONFIG or ~/.kube/config, then the
// in-cluster service account. It reads files but neither contacts the
// cluster nor runs an exec plugin. Its errors name the attribute or
// environment variable each value came from. Credentials bound for an
// http:// server without AllowPlaintextCredentials fail with a
// *CredentialsError, whichever source they came from; a kubeconfig user's
// fail with it too, since client-go would drop them.
func (s ConnectionSettings) Resolve(getenv func(string) string) (*Connection, error) {
	merged, err := s.WithEnvironment(getenv)
	if err != nil {
		return nil, err
	}
	name := func(attr string) string {
		if env, ok := merged.fromEnvironment(s, attr); ok {
			return env
		}
		return attributeName(attr)
	}
	problems := merged.validate(name, false)
	if merged.Host == "" && merged.ConfigPath == "" {
		// A kubeconfig found by default, or the in-cluster configuration,
		// has credentials and a CA of its own.
		for _, attr := range merged.hostOnlyAttributes() {
			problems = append(problems, SettingError{attr, name(attr) + " only applies with kubernetes.host (or KUBE_HOST), which is not set: " +
				"the connection would come from a kubeconfig or the in-cluster service account and ignore it. Remove " + name(attr) +
				", or set kubernetes.host"})
		}
	}
	if len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = errors.New(p.Problem)
		}
		return nil, errors.Join(errs...)
	}
	conn, err := merged.connection(name)
	if err != nil {
		return nil, err
	}
	conn.config.UserAgent = "terraform-provider-gpu"
	conn.allowPlaintext = s.AllowPlaintextCredentials
	if err := conn.checkPlaintext(); err != nil {
		return nil, err
	}
	return conn, nil
}

// fromEnvironment returns the environment variable that attr's value in s
// (the settings with the environment filled in) came from, when block (the
// settings as configured) left attr unset.
func (s ConnectionSettings) fromEnvironment(block ConnectionSettings, attr string) (string, bool) {
	fields := map[string]struct {
		env           string
		merged, block string
	}{
		"config_path":            {EnvConfigPath, s.ConfigPath, block.ConfigPath},
		"config_context":         {EnvConfigContext, s.ConfigContext, block.ConfigContext},
		"host":                   {EnvHost, s.Host, block.Host},
		"token":                  {EnvToken, s.Token, block.Token},
		"cluster_ca_certificate": {EnvClusterCACertificate, s.ClusterCACertificate, block.ClusterCACertificate},
		"client_certificate":     {EnvClientCertificate, s.ClientCertificate, block.ClientCertificate},
		"client_key":             {EnvClientKey, s.ClientKey, block.ClientKey},
		"insecure":               {EnvInsecure, strconv.FormatBool(s.Insecure), strconv.FormatBool(block.Insecure)},
	}
	f, ok := fields[attr]
	if !ok || f.block != "" && f.block != "false" || f.merged == "" || f.merged == "false" {
		return "", false
	}
	return f.env, true
}

// connection resolves validated settings; name(attr) says where attr's
// value came from.
func (s ConnectionSettings) connection(name func(attr string) string) (*Connection, error) {
	switch {
	case s.Host != "":
		return &Connection{
			config: &rest.Config{
				Host:        s.Host,
				BearerToken: s.Token,
				TLSClientConfig: rest.TLSClientConfig{
					Insecure: s.Insecure,
					CAData:   []byte(s.ClusterCACertificate),
					CertData: []byte(s.ClientCertificate),
					KeyData:  []byte(s.ClientKey),
				},
			},
			origin: explicitOrigin(s, name),
			tokens: s.TokenSource,
		}, nil
	case s.ConfigPath != "":
		path := expandHome(s.ConfigPath)
		return s.fromKubeconfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, kubeconfigSource{files: path, chosenBy: name("config_path")}, name)
	case os.Getenv("KUBECONFIG") != "":
		return s.fromKubeconfig(clientcmd.NewDefaultClientConfigLoadingRules(), kubeconfigSource{files: os.Getenv("KUBECONFIG"), chosenBy: "KUBECONFIG"}, name)
	case fileExists(clientcmd.RecommendedHomeFile):
		return s.fromKubeconfig(clientcmd.NewDefaultClientConfigLoadingRules(), kubeconfigSource{files: clientcmd.RecommendedHomeFile, chosenBy: "the default location"}, name)
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the in-cluster configuration: %w", err)
		}
		return &Connection{config: cfg, origin: inClusterOrigin(cfg)}, nil
	default:
		return nil, errors.New("no Kubernetes cluster configured: set kubernetes.config_path or kubernetes.host in the provider block, or KUBECONFIG in the environment")
	}
}

// fromKubeconfig loads the context of the kubeconfig that rules find;
// src names the files and what chose them.
func (s ConnectionSettings) fromKubeconfig(rules *clientcmd.ClientConfigLoadingRules, src kubeconfigSource, name func(attr string) string) (*Connection, error) {
	overrides := &clientcmd.ConfigOverrides{CurrentContext: s.ConfigContext}
	if s.Insecure {
		overrides.ClusterInfo.InsecureSkipTLSVerify = true
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s (%s): %w", src.files, src.chosenBy, err)
	}
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s (%s): %w", src.files, src.chosenBy, err)
	}
	if s.Insecure {
		// A kubeconfig CA and insecure cannot coexist in client-go.
		cfg.TLSClientConfig.CAData = nil
		cfg.TLSClientConfig.CAFile = ""
	}
	src.contextName, src.contextFrom = raw.CurrentContext, "its current-context"
	if s.ConfigContext != "" {
		src.contextName, src.contextFrom = s.ConfigContext, name("config_context")
	}
	if s.Insecure {
		src.insecureFrom = name("insecure")
	}
	o := kubeconfigOrigin(raw, src, cfg)
	if u, _, err := rest.DefaultServerUrlFor(cfg); err == nil && u.Scheme == "http" && !o.kinds.none() {
		return nil, kubeconfigPlaintextError(o, serverOf(u))
	}
	return &Connection{config: cfg, origin: o}, nil
}

// checkPlaintext refuses credentials bound for a plain-HTTP server, unless
// allowed. The server's scheme is client-go's own reading of the host: a
// host without one is plain HTTP unless a CA, a client certificate or
// insecure is set.
func (c *Connection) checkPlaintext() error {
	if c.allowPlaintext || !hasCredentials(c.config) && c.tokens == nil {
		return nil
	}
	// A host that does not parse fails when the client is built.
	if u, _, err := rest.DefaultServerUrlFor(c.config); err == nil && u.Scheme == "http" {
		return plaintextCredentialsError(c.origin, serverOf(u))
	}
	return nil
}

// hasCredentials reports whether cfg authenticates its requests in any way.
func hasCredentials(cfg *rest.Config) bool {
	return cfg.BearerToken != "" || cfg.BearerTokenFile != "" || cfg.Username != "" || cfg.Password != "" ||
		len(cfg.CertData) > 0 || cfg.CertFile != "" || len(cfg.KeyData) > 0 || cfg.KeyFile != "" ||
		cfg.ExecProvider != nil || cfg.AuthProvider != nil
}

func expandHome(path string) string {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return path
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
