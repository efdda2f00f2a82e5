package provider

import (
	"time"

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
	// AllowPlaintextCredentials is the opt-in to credentials over plain
	// HTTP; see kube.ConnectionSettings.
	AllowPlaintextCredentials types.Bool   `tfsdk:"allow_plaintext_credentials"`
	UnreachableTimeout        types.String `tfsdk:"unreachable_timeout"`
	// EKS reaches an EKS cluster with the AWS credentials
	// (provider_kubernetes_eks.go).
	EKS *kubernetesEKSModel `tfsdk:"eks"`
}

func kubernetesBlockSchema() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "How to reach the Kubernetes cluster used by `gpu_device_plugin`, `gpu_workload` and `gpu_inventory` " +
			"(`source = \"kubernetes\"`). Set a kubeconfig (`config_path`, `config_context`) or an explicit `host` with credentials, not both. " +
			"Unset attributes fall back to the environment variables hashicorp/kubernetes reads (`KUBE_CONFIG_PATH`, `KUBE_CTX`, `KUBE_HOST`, " +
			"`KUBE_TOKEN`, `KUBE_CLUSTER_CA_CERT_DATA`, `KUBE_CLIENT_CERT_DATA`, `KUBE_CLIENT_KEY_DATA`, `KUBE_INSECURE`), then to `KUBECONFIG` " +
			"or `~/.kube/config`, then to the in-cluster service account. The `eks` block instead reaches an EKS cluster with the AWS credentials. Credentials never go to an `http://` server unless " +
			"`allow_plaintext_credentials = true`. When the API server rejects the credentials or TLS fails, the error names the settings in use " +
			"and where each came from (attribute, environment variable, or kubeconfig user, cluster and context), never a secret.",
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
				Optional: true,
				MarkdownDescription: "URL of the Kubernetes API server, e.g. `https://1.2.3.4:6443`. Environment: `KUBE_HOST`. Conflicts with `config_path`. " +
					"An `http://` URL takes no credentials unless `allow_plaintext_credentials = true`.",
			},
			"token": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "Bearer token for `host`; only with `host` (a kubeconfig's user has its own). Environment: `KUBE_TOKEN`.",
			},
			"cluster_ca_certificate": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "PEM-encoded CA certificate that signed the API server's certificate; only with `host` (a kubeconfig's cluster has its own). " +
					"Unset, the system's trusted CAs verify the server. Environment: `KUBE_CLUSTER_CA_CERT_DATA`.",
			},
			"client_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PEM-encoded client certificate for TLS client authentication; needs `client_key`, only with `host`. Environment: `KUBE_CLIENT_CERT_DATA`.",
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
			"allow_plaintext_credentials": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Send credentials to an `http://` `host` (or `KUBE_HOST`), where anyone on the network path can read them. Off by default: " +
					"a token or client certificate bound for a plain-HTTP server fails `terraform plan` with an error naming where each came from, and no " +
					"request carries an `Authorization` header over plain HTTP, redirects and exec plugins included. A kubeconfig user's credentials " +
					"never go to a plain-HTTP server, opted in or not (client-go leaves them out), so such a kubeconfig fails the plan either way. " +
					"A plain-HTTP server without credentials needs no opt-in. Turn it on only for a server on a network you trust; it has no environment variable.",
			},
			"unreachable_timeout": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "How long a wait (a Job's completion, a rollout, a deletion) keeps retrying while no request reaches the API server, " +
					"before the apply fails with `API server <host> unreachable since <time>: <last error>`. A restart of the API server within it " +
					"goes unnoticed; each failed attempt is logged. A duration as Go writes it, e.g. `90s`, `10m`. Defaults to `" +
					kube.DefaultUnreachableLimit.String() + "`; the resource's own `timeouts` still bound the whole wait.",
			},
		},
		Blocks: map[string]schema.Block{
			"eks": kubernetesEKSBlockSchema(),
		},
	}
}

func (m *kubernetesBlockModel) anyUnknown() bool {
	for _, v := range []interface{ IsUnknown() bool }{
		m.ConfigPath, m.ConfigContext, m.Host, m.Token, m.ClusterCACertificate, m.ClientCertificate, m.ClientKey, m.Insecure,
		m.AllowPlaintextCredentials,
	} {
		if v.IsUnknown() {
			return true
		}
	}
	return m.EKS.anyUnknown()
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

		AllowPlaintextCredentials: m.AllowPlaintextCredentials.ValueBool(),
	}
}

// unreachableLimit is unreachable_timeout, or zero (kube's default) when
// it is unset or invalid (validate reports that).
func (m *kubernetesBlockModel) unreachableLimit() time.Duration {
	if m == nil {
		return 0
	}
	d, err := time.ParseDuration(m.UnreachableTimeout.ValueString())
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// validate checks the block as written; values not known until apply are
// checked when the client is built.
func (m *kubernetesBlockModel) validate() diag.Diagnostics {
	var diags diag.Diagnostics
	if m == nil {
		return diags
	}
	if m.EKS != nil {
		return m.validateEKS()
	}
	if m.anyUnknown() {
		return diags
	}
	for _, problem := range m.settings().Validate() {
		diags.AddAttributeError(path.Root("kubernetes").AtName(problem.Attribute), "Invalid kubernetes provider configuration", problem.Problem)
	}
	if v := m.UnreachableTimeout; !v.IsNull() {
		if d, err := time.ParseDuration(v.ValueString()); err != nil || d <= 0 {
			diags.AddAttributeError(path.Root("kubernetes").AtName("unreachable_timeout"), "Invalid kubernetes provider configuration",
				"kubernetes.unreachable_timeout "+quote(v.ValueString())+" is not a positive duration: write it as Go does, e.g. \"90s\" or \"10m\"")
		}
	}
	return diags
}
