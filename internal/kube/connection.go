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
// fix. It never touches the network or the filesystem.
func (s ConnectionSettings) Validate() []SettingError {
	var errs []SettingError
	add := func(attr, problem string) { errs = append(errs, SettingError{attr, problem}) }
	if s.ConfigPath != "" && s.Host != "" {
		add("host", "kubernetes.config_path and kubernetes.host are both set: use a kubeconfig file or an explicit host, not both")
	}
	if s.ConfigContext != "" && s.Host != "" {
		add("config_context", "kubernetes.config_context only applies to a kubeconfig file: remove it, or remove kubernetes.host")
	}
	if s.Host != "" {
		if err := validateHost(s.Host); err != nil {
			add("host", err.Error())
		}
	}
	if s.ClientCertificate != "" && s.ClientKey == "" {
		add("client_key", "kubernetes.client_certificate is set without kubernetes.client_key: set both or neither")
	}
	if s.ClientKey != "" && s.ClientCertificate == "" {
		add("client_certificate", "kubernetes.client_key is set without kubernetes.client_certificate: set both or neither")
	}
	if s.Insecure && s.ClusterCACertificate != "" {
		add("insecure", "kubernetes.insecure = true turns off the check that kubernetes.cluster_ca_certificate is for: remove one of them")
	}
	for _, pem := range []struct{ attr, value string }{
		{"cluster_ca_certificate", s.ClusterCACertificate},
		{"client_certificate", s.ClientCertificate},
		{"client_key", s.ClientKey},
	} {
		if pem.value != "" && !strings.Contains(pem.value, "-----BEGIN ") {
			add(pem.attr, "kubernetes."+pem.attr+" is not PEM-encoded: give the PEM text (for example file(\"ca.crt\") or base64decode(var.ca_data)), not a path or base64")
		}
	}
	return errs
}

func validateHost(host string) error {
	u, err := url.Parse(host)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("kubernetes.host %q is not a URL: write it as https://HOST[:PORT]", host)
	}
	return nil
}

// RESTConfig resolves the settings into a client-go configuration: an explicit
// host, then a kubeconfig file, then KUBECONFIG or ~/.kube/config, then the
// in-cluster service account. It reads files but does not contact the cluster.
func (s ConnectionSettings) RESTConfig() (*rest.Config, error) {
	if problems := s.Validate(); len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = p
		}
		return nil, errors.Join(errs...)
	}
	var (
		cfg *rest.Config
		err error
	)
	switch {
	case s.Host != "":
		cfg = &rest.Config{
			Host:        s.Host,
			BearerToken: s.Token,
			TLSClientConfig: rest.TLSClientConfig{
				Insecure: s.Insecure,
				CAData:   []byte(s.ClusterCACertificate),
				CertData: []byte(s.ClientCertificate),
				KeyData:  []byte(s.ClientKey),
			},
		}
	case s.ConfigPath != "":
		cfg, err = s.fromKubeconfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: expandHome(s.ConfigPath)})
	case os.Getenv("KUBECONFIG") != "" || fileExists(clientcmd.RecommendedHomeFile):
		cfg, err = s.fromKubeconfig(clientcmd.NewDefaultClientConfigLoadingRules())
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		cfg, err = rest.InClusterConfig()
	default:
		return nil, errors.New("no Kubernetes cluster configured: set kubernetes.config_path or kubernetes.host in the provider block, or KUBECONFIG in the environment")
	}
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "terraform-provider-gpu"
	return cfg, nil
}

func (s ConnectionSettings) fromKubeconfig(rules *clientcmd.ClientConfigLoadingRules) (*rest.Config, error) {
	overrides := &clientcmd.ConfigOverrides{CurrentContext: s.ConfigContext}
	if s.Insecure {
		overrides.ClusterInfo.InsecureSkipTLSVerify = true
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		where := rules.ExplicitPath
		if where == "" {
			where = strings.Join(rules.Precedence, ":")
		}
		return nil, fmt.Errorf("loading kubeconfig %s: %w", where, err)
	}
	if s.Insecure {
		// A kubeconfig CA and insecure cannot coexist in client-go.
		cfg.TLSClientConfig.CAData = nil
		cfg.TLSClientConfig.CAFile = ""
	}
	return cfg, nil
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
