package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// clusterAccessTimeout bounds the DescribeCluster that reaching an EKS
// cluster's API server takes, when the caller's context has no deadline of
// its own (Clients.Kubernetes has none).
const clusterAccessTimeout = 2 * time.Minute

// awsClients is the AWS side of Clients: one eks.Client per region, built
// on first use, and one Kubernetes connection per EKS cluster reached. Each
// eks.Client caches the instance-type facts it reads, so one Terraform
// command describes a type once however many resources plan with it.
type awsClients struct {
	settings eks.Settings

	mu       sync.Mutex
	byRegion map[string]*eks.Client
	clusters map[string]*kube.Cluster // "region/cluster"
}

// AWS returns the AWS client of the provider's aws block, building it on
// the first call. Like Kubernetes(), it lives as long as the Configure
// that made it: one Terraform command.
func (c *Clients) AWS(ctx context.Context) (*eks.Client, error) {
	return c.awsIn(ctx, "")
}

// awsIn returns the client for region; "" is the aws block's region (or the
// SDK's default).
func (c *Clients) awsIn(ctx context.Context, region string) (*eks.Client, error) {
	a := &c.aws
	a.mu.Lock()
	defer a.mu.Unlock()
	if client, ok := a.byRegion[region]; ok {
		return client, nil
	}
	settings := a.settings
	if region != "" {
		settings.Region = region
	}
	client, err := settings.Connect(ctx)
	if errors.Is(err, eks.ErrNoRegion) {
		return nil, fmt.Errorf("%w: set region in the provider's aws block (or AWS_REGION in the environment, or region in the AWS profile)", err)
	}
	if err != nil {
		return nil, err
	}
	if a.byRegion == nil {
		a.byRegion = map[string]*eks.Client{}
	}
	a.byRegion[region] = client
	return client, nil
}

// awsFor returns the AWS client for a resource operation, or nil after
// adding an error titled summary to diags.
func (c *Clients) awsFor(ctx context.Context, summary string, diags *diag.Diagnostics) *eks.Client {
	return backendFor(c, summary, "the AWS client (provider block aws, or the AWS_* environment variables)", func() (*eks.Client, error) { return c.AWS(ctx) }, diags)
}

// eksCluster returns a connection to the API server of EKS cluster name in
// region ("" for the aws block's), reached with no kubeconfig and no CLI:
// its endpoint and CA from DescribeCluster, a token minted in Go and
// renewed before it expires. Connections are kept for the command.
func (c *Clients) eksCluster(ctx context.Context, region, name string) (*kube.Cluster, error) {
	client, err := c.awsIn(ctx, region)
	if err != nil {
		return nil, err
	}
	key := client.Region() + "/" + name
	c.aws.mu.Lock()
	cached, ok := c.aws.clusters[key]
	c.aws.mu.Unlock()
	if ok {
		return cached, nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, clusterAccessTimeout)
		defer cancel()
	}
	start := time.Now()
	access, err := client.ClusterAccess(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("reaching the Kubernetes API of EKS cluster %q in %s: %w", name, client.Region(), err)
	}
	tflog.Debug(ctx, "described EKS cluster for Kubernetes access", map[string]any{"cluster": name, "region": client.Region(), "duration": time.Since(start).String()})
	settings := kube.ConnectionSettings{Host: access.Endpoint, ClusterCACertificate: string(access.CAPEM), TokenSource: access.Tokens}
	// The EKS settings pick the connection: no KUBE_* variable mixes in.
	conn, err := settings.Resolve(func(string) string { return "" })
	if err != nil {
		return nil, fmt.Errorf("EKS cluster %q in %s: %w", name, client.Region(), err)
	}
	cluster, err := conn.Connect(kube.ClusterOptions{UserAgent: c.userAgent, UnreachableLimit: c.kubeUnreachableLimit})
	if err != nil {
		return nil, fmt.Errorf("EKS cluster %q in %s: %w", name, client.Region(), err)
	}
	c.aws.mu.Lock()
	defer c.aws.mu.Unlock()
	if cached, ok := c.aws.clusters[key]; ok {
		return cached, nil
	}
	if c.aws.clusters == nil {
		c.aws.clusters = map[string]*kube.Cluster{}
	}
	c.aws.clusters[key] = cluster
	return cluster, nil
}
