package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// Clients is what Configure hands to resources and data sources: the
// provider's settings, and the backend clients built from them on first use.
// Nothing is contacted, and no credential is looked up, until a resource asks.
type Clients struct {
	kubernetes kube.ConnectionSettings
	aws        awsSettings
	proxmox    proxmoxSettings
	userAgent  string
	getenv     func(string) string // os.Getenv unless a test sets it

	kubeOnce   sync.Once
	kubeClient kubernetes.Interface
	kubeErr    error

	awsOnce   sync.Once
	awsConfig aws.Config
	awsErr    error
}

func (c *Clients) env(key string) string {
	if c.getenv != nil {
		return c.getenv(key)
	}
	return os.Getenv(key)
}

// Kubernetes returns the cluster client, building it on the first call.
func (c *Clients) Kubernetes() (kubernetes.Interface, error) {
	c.kubeOnce.Do(func() {
		settings, err := c.kubernetes.WithEnvironment(c.env)
		if err != nil {
			c.kubeErr = err
			return
		}
		cfg, err := settings.RESTConfig()
		if err != nil {
			c.kubeErr = err
			return
		}
		cfg.UserAgent = c.userAgent
		c.kubeClient, c.kubeErr = kube.NewClientset(cfg)
	})
	return c.kubeClient, c.kubeErr
}

// kubernetesFor returns the cluster client for a resource operation, or nil
// after adding an error titled summary to diags. A nil Clients means the
// provider was never configured, which is a bug in the provider.
func (c *Clients) kubernetesFor(summary string, diags *diag.Diagnostics) kubernetes.Interface {
	if c == nil {
		diags.AddError(summary, "the provider is not configured: this is a bug in the provider, please report it")
		return nil
	}
	client, err := c.Kubernetes()
	if err != nil {
		diags.AddError(summary, "configuring the Kubernetes client: "+err.Error())
		return nil
	}
	return client
}

// AWS returns the SDK configuration, resolving credentials on the first call.
func (c *Clients) AWS(ctx context.Context) (aws.Config, error) {
	c.awsOnce.Do(func() {
		var opts []func(*awsconfig.LoadOptions) error
		if c.aws.Region != "" {
			opts = append(opts, awsconfig.WithRegion(c.aws.Region))
		}
		if c.aws.Profile != "" {
			opts = append(opts, awsconfig.WithSharedConfigProfile(c.aws.Profile))
		}
		opts = append(opts, awsconfig.WithAppID("terraform-provider-gpu"))
		cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			c.awsErr = fmt.Errorf("loading AWS configuration: %w", err)
			return
		}
		if cfg.Region == "" {
			c.awsErr = errors.New("no AWS region configured: set aws.region in the provider block, or AWS_REGION in the environment")
			return
		}
		c.awsConfig = cfg
	})
	return c.awsConfig, c.awsErr
}

// ProxmoxSettings returns the `proxmox` block completed from PM_* variables,
// or an error naming what is missing.
func (c *Clients) ProxmoxSettings() (proxmoxSettings, error) {
	s := c.proxmox
	fill := func(field *string, env string) {
		if *field == "" {
			*field = c.env(env)
		}
	}
	fill(&s.Endpoint, "PM_API_URL")
	fill(&s.APITokenID, "PM_API_TOKEN_ID")
	fill(&s.APITokenSecret, "PM_API_TOKEN_SECRET")
	fill(&s.Username, "PM_USER")
	fill(&s.Password, "PM_PASS")
	if v := c.env("PM_TLS_INSECURE"); !s.InsecureTLS && v != "" {
		insecure, err := strconv.ParseBool(v)
		if err != nil {
			return s, fmt.Errorf("PM_TLS_INSECURE=%q is not a boolean: use true or false", v)
		}
		s.InsecureTLS = insecure
	}
	var errs []error
	for _, p := range s.problems() {
		errs = append(errs, errors.New(p.text))
	}
	if s.Endpoint == "" {
		errs = append(errs, errors.New("no Proxmox endpoint configured: set proxmox.endpoint in the provider block, or PM_API_URL"))
	}
	if s.APITokenID == "" && s.Username == "" {
		errs = append(errs, errors.New("no Proxmox credentials configured: set proxmox.api_token_id and api_token_secret, or username and password (or PM_API_TOKEN_ID/PM_API_TOKEN_SECRET, PM_USER/PM_PASS)"))
	}
	return s, errors.Join(errs...)
}

// clientsFrom extracts the provider's Clients from ProviderData, reporting a
// provider bug when it is of the wrong type. A nil result with no error means
// the provider is not configured yet (validation before configure).
func clientsFrom(providerData any) (*Clients, diag.Diagnostics) {
	var diags diag.Diagnostics
	if providerData == nil {
		return nil, diags
	}
	c, ok := providerData.(*Clients)
	if !ok {
		diags.AddError("Unexpected provider data", fmt.Sprintf("expected *provider.Clients, got %T: this is a bug in the provider, please report it", providerData))
	}
	return c, diags
}
