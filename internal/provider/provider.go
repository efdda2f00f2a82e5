// Package provider implements the `gpu` Terraform provider on
// terraform-plugin-framework: its configuration, resources and data sources.
//
// It must not import go-nvml or anything else that needs cgo: the provider
// is released with CGO_ENABLED=0. Backend transport code (Kubernetes, EKS,
// Proxmox) lives in its own package under internal/; this package maps
// Terraform schemas onto it.
package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

var (
	_ provider.Provider                   = &GPUProvider{}
	_ provider.ProviderWithValidateConfig = &GPUProvider{}
)

// GPUProvider is the `gpu` provider.
type GPUProvider struct {
	version string
}

// New returns a constructor of the provider, as providerserver expects.
func New(version string) func() provider.Provider {
	return func() provider.Provider {
		return &GPUProvider{version: version}
	}
}

// providerModel is the provider block. Each backend block is optional and is
// only contacted when a resource or data source that needs it is used.
type providerModel struct {
	Kubernetes *kubernetesBlockModel `tfsdk:"kubernetes"`
	AWS        *awsBlockModel        `tfsdk:"aws"`
	Proxmox    *proxmoxBlockModel    `tfsdk:"proxmox"`
}

func (p *GPUProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "gpu"
	resp.Version = p.version
}

func (p *GPUProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Manages NVIDIA GPU infrastructure: EKS GPU node groups, the NVIDIA device plugin and GPU workloads on Kubernetes, " +
			"Proxmox VE VMs with GPUs passed through, and an inventory of GPUs (a cluster's nodes, EC2's instance types, Proxmox nodes' PCI buses). " +
			"Each backend block (`kubernetes`, `aws`, `proxmox`) is optional and is only contacted when a " +
			"resource or data source that needs it is used: a configuration with only Kubernetes resources needs no AWS or Proxmox credentials.",
		Blocks: map[string]schema.Block{
			"kubernetes": kubernetesBlockSchema(),
			"aws":        awsBlockSchema(),
			"proxmox":    proxmoxBlockSchema(),
		},
	}
}

// ValidateConfig rejects settings that can never work before anything is
// contacted. Values that are unknown at plan time are checked in Configure.
func (p *GPUProvider) ValidateConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	var config providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(config.Kubernetes.validate()...)
	resp.Diagnostics.Append(config.AWS.validate()...)
	resp.Diagnostics.Append(config.Proxmox.validate()...)
}

// Configure records the settings; it opens no connection. Clients are built
// on first use by the resource that needs them.
func (p *GPUProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var config providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	clients := &Clients{
		kubernetes:           config.Kubernetes.settings(),
		kubeUnreachableLimit: config.Kubernetes.unreachableLimit(),
		userAgent:            "terraform-provider-gpu/" + p.version,
		planReads:            newPlanReads(config.Kubernetes),
		aws:                  awsClients{settings: config.AWS.settings("terraform-provider-gpu/" + p.version)},
		proxmox:              proxmoxClients{settings: config.Proxmox.settings(), unknown: config.Proxmox.anyUnknown()},
	}
	if config.Kubernetes != nil {
		clients.kubernetesEKS = config.Kubernetes.EKS.ref()
	}
	resp.Diagnostics.Append(clients.refusePlaintextCredentials(config.Kubernetes)...)
	resp.DataSourceData = clients
	resp.ResourceData = clients
}

func (p *GPUProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewDevicePluginResource,
		NewDRADriverResource,
		NewWorkloadResource,
		NewNodeGroupResource,
		NewPassthroughVMResource,
		NewPCIMappingResource,
	}
}

func (p *GPUProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewInventoryDataSource,
	}
}
