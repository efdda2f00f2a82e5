package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// kubernetesBlockModel is the provider's `kubernetes` block.
type kubernetesBlockModel struct {
	ConfigPath           types.String `tfsdk:"config_path"`
	ConfigContext        types.String `tfsdk:"config_context"`
	Host                 types.String `tfsdk:"host"`
	Token                types.String `tfsdk:"token"`
	ClusterCACertificate types.String `tfsdk:"cluster_ca_certificate"`
	ClientCertificate    types.String `tfsdk:"client_certificate"`
	ClientKey            types.String `tfsdk:"client_key"`
	Insecure             types.Bool   `tfsdk:"insecure"`
}

func kubernetesBlockSchema() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "How to reach the Kubernetes cluster used by `gpu_device_plugin`, `gpu_workload` and `gpu_inventory` " +
			"(`source = \"kubernetes\"`). Set a kubeconfig (`config_path`, `config_context`) or an explicit `host` with credentials, not both. " +
			"Unset attributes fall back to the environment variables hashicorp/kubernetes reads (`KUBE_CONFIG_PATH`, `KUBE_CTX`, `KUBE_HOST`, " +
			"`KUBE_TOKEN`, `KUBE_CLUSTER_CA_CERT_DATA`, `KUBE_CLIENT_CERT_DATA`, `KUBE_CLIENT_KEY_DATA`, `KUBE_INSECURE`), then to `KUBECONFIG` " +
			"or `~/.kube/config`, then to the in-cluster service account.",
		Attributes: map[string]schema.Attribute{
			"config_path": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Path to a kubeconfig file. `~/` is expanded. Environment: `KUBE_CONFIG_PATH`. Conflicts with `host`.",
			},
			"config_context": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Context of the kubeconfig to use instead of its current context. Environment: `KUBE_CTX`.",
			},
			"host": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "URL of the Kubernetes API server, e.g. `https://1.2.3.4:6443`. Environment: `KUBE_HOST`. Conflicts with `config_path`.",
			},
			"token": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "Bearer token for `host`. Environment: `KUBE_TOKEN`.",
			},
			"cluster_ca_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PEM-encoded CA certificate that signed the API server's certificate. Environment: `KUBE_CLUSTER_CA_CERT_DATA`.",
			},
			"client_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PEM-encoded client certificate for TLS client authentication; needs `client_key`. Environment: `KUBE_CLIENT_CERT_DATA`.",
			},
			"client_key": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "PEM-encoded private key of `client_certificate`. Environment: `KUBE_CLIENT_KEY_DATA`.",
			},
			"insecure": schema.BoolAttribute{
				Optional:            true,
				MarkdownDescription: "Skip verification of the API server's certificate. Off by default; conflicts with `cluster_ca_certificate`. Environment: `KUBE_INSECURE`.",
			},
		},
	}
}

func (m *kubernetesBlockModel) anyUnknown() bool {
	for _, v := range []interface{ IsUnknown() bool }{
		m.ConfigPath, m.ConfigContext, m.Host, m.Token, m.ClusterCACertificate, m.ClientCertificate, m.ClientKey, m.Insecure,
	} {
		if v.IsUnknown() {
			return true
		}
	}
	return false
}

// settings is the block as the kube package takes it; nil block, zero settings.
func (m *kubernetesBlockModel) settings() kube.ConnectionSettings {
	if m == nil {
		return kube.ConnectionSettings{}
	}
	return kube.ConnectionSettings{
		ConfigPath:           m.ConfigPath.ValueString(),
		ConfigContext:        m.ConfigContext.ValueString(),
		Host:                 m.Host.ValueString(),
		Token:                m.Token.ValueString(),
		ClusterCACertificate: m.ClusterCACertificate.ValueString(),
		ClientCertificate:    m.ClientCertificate.ValueString(),
		ClientKey:            m.ClientKey.ValueString(),
		Insecure:             m.Insecure.ValueBool(),
	}
}

// validate checks the block as written; values not known until apply are
// checked when the client is built.
func (m *kubernetesBlockModel) validate() diag.Diagnostics {
	var diags diag.Diagnostics
	if m == nil || m.anyUnknown() {
		return diags
	}
	for _, problem := range m.settings().Validate() {
		diags.AddAttributeError(path.Root("kubernetes").AtName(problem.Attribute), "Invalid kubernetes provider configuration", problem.Problem)
	}
	return diags
}
