package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// Clients is what Configure hands to resources and data sources: the
// provider's settings, and the backend clients built from them on first use.
// Nothing is contacted until a resource asks; Configure only resolves the
// Kubernetes settings (reading a kubeconfig, running no exec plugin) to
// refuse credentials bound for a plain-HTTP server.
type Clients struct {
	kubernetes kube.ConnectionSettings
	// kubernetesEKS, when set (the kubernetes block's eks), replaces
	// kubernetes: the cluster is reached through the AWS side.
	kubernetesEKS *eksClusterRef
	// kubeUnreachableLimit is kubernetes.unreachable_timeout; zero means
	// kube's default.
	kubeUnreachableLimit time.Duration
	userAgent            string
	getenv               func(string) string // os.Getenv unless a test sets it

	// aws is the AWS side (clients_aws.go).
	aws awsClients
	// proxmox is the Proxmox VE side (clients_proxmox.go).
	proxmox proxmoxClients

	kubeOnce    sync.Once
	kubeCluster *kube.Cluster
	kubeErr     error

	// planReads is what plan-time warnings read from the cluster, once
	// (clients_plan_reads.go); nil reads nothing.
	planReads *planReads
}

func (c *Clients) env(key string) string {
	if c.getenv != nil {
		return c.getenv(key)
	}
	return os.Getenv(key)
}

// Kubernetes returns the cluster, building its client on the first call.
// The Cluster is per Configure, so per Terraform command: nothing
// authenticated outlives the command that configured it.
func (c *Clients) Kubernetes() (*kube.Cluster, error) {
	c.kubeOnce.Do(func() {
		if ref := c.kubernetesEKS; ref != nil {
			c.kubeCluster, c.kubeErr = c.eksCluster(context.Background(), ref.Region, ref.ClusterName)
			return
		}
		conn, err := c.kubernetes.Resolve(c.env)
		if err != nil {
			c.kubeErr = err
			return
		}
		c.kubeCluster, c.kubeErr = conn.Connect(kube.ClusterOptions{UserAgent: c.userAgent, UnreachableLimit: c.kubeUnreachableLimit})
	})
	return c.kubeCluster, c.kubeErr
}

// refusePlaintextCredentials is Configure's check, at plan time, that no
// credentials would go to a plain-HTTP API server without the opt-in,
// wherever they come from: the block (known only now when it refers to
// other resources), the KUBE_* variables, or a kubeconfig. Nothing else is
// reported here: a configuration that uses no Kubernetes resource needs no
// working Kubernetes settings, and their other problems surface on first
// use. block is the configured `kubernetes` block, nil when absent.
func (c *Clients) refusePlaintextCredentials(block *kubernetesBlockModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if block != nil && block.anyUnknown() {
		return diags // checked again when the client is built
	}
	if c.kubernetesEKS != nil {
		return diags // an EKS endpoint is https, with a token minted for it
	}
	_, err := c.kubernetes.Resolve(c.env)
	var refused *kube.CredentialsError
	if errors.As(err, &refused) {
		diags.AddError("Invalid kubernetes provider configuration", err.Error())
	}
	return diags
}

// kubernetesFor returns the cluster for a resource operation, or nil after
// adding an error titled summary to diags. A nil Clients means the
// provider was never configured, which is a bug in the provider.
func (c *Clients) kubernetesFor(summary string, diags *diag.Diagnostics) *kube.Cluster {
	return backendFor(c, summary, "the Kubernetes client", func() (*kube.Cluster, error) { return c.Kubernetes() }, diags)
}

// backendFor is what kubernetesFor, awsFor and proxmoxFor share: the
// client build returns for a resource operation, or nil after adding an
// error titled summary to diags that says what failed to configure.
func backendFor[T any](c *Clients, summary, what string, build func() (*T, error), diags *diag.Diagnostics) *T {
	if c == nil {
		diags.AddError(summary, "the provider is not configured: this is a bug in the provider, please report it")
		return nil
	}
	client, err := build()
	if err != nil {
		diags.AddError(summary, "configuring "+what+": "+err.Error())
		return nil
	}
	return client
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
