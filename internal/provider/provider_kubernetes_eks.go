package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// kubernetesEKSModel is the kubernetes block's `eks` block: reach an EKS
// cluster's API server with the AWS credentials, as Terraform Cloud runs
// must (no aws CLI for a kubeconfig exec plugin there).
type kubernetesEKSModel struct {
	ClusterName types.String `tfsdk:"cluster_name"`
	Region      types.String `tfsdk:"region"`
}

// eksClusterRef names an EKS cluster; Region "" is the aws block's.
type eksClusterRef struct {
	ClusterName, Region string
}

// kubernetesEKSConflicts are the kubernetes block's attributes that say
// how to connect, which eks replaces.
var kubernetesEKSConflicts = []string{
	"config_path", "config_context", "host", "token", "cluster_ca_certificate", "client_certificate", "client_key", "insecure",
}

func kubernetesEKSBlockSchema() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Reach the API server of an EKS cluster with the provider's AWS credentials (the `aws` block and the AWS SDK's " +
			"default chain) and no kubeconfig or `aws` CLI: the endpoint and CA come from EKS DescribeCluster, and the bearer token is an EKS " +
			"token minted in Go as `aws eks get-token` mints it (a presigned STS GetCallerIdentity URL), renewed before its 15 minutes end. " +
			"This is how a Terraform Cloud run reaches EKS. Conflicts with " + backtickList(kubernetesEKSConflicts) + ". " +
			"The cluster is described when a Kubernetes resource or data source first needs it, so it may be created in the same configuration " +
			"when `cluster_name` refers to it.",
		Attributes: map[string]schema.Attribute{
			"cluster_name": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Name of the EKS cluster. Required in this block.",
			},
			"region": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Region of the cluster. Defaults to `aws.region`, then to the AWS SDK's (`AWS_REGION`, the profile's).",
			},
		},
	}
}

// ref is the block as Clients takes it; nil when the block is absent.
func (m *kubernetesEKSModel) ref() *eksClusterRef {
	if m == nil {
		return nil
	}
	return &eksClusterRef{ClusterName: m.ClusterName.ValueString(), Region: m.Region.ValueString()}
}

func (m *kubernetesEKSModel) anyUnknown() bool {
	return m != nil && (m.ClusterName.IsUnknown() || m.Region.IsUnknown())
}

// validateEKS checks the eks block and that nothing else in the kubernetes
// block says how to connect.
func (m *kubernetesBlockModel) validateEKS() diag.Diagnostics {
	var diags diag.Diagnostics
	e := m.EKS
	if e == nil {
		return diags
	}
	at := path.Root("kubernetes").AtName("eks")
	if e.ClusterName.IsNull() || (!e.ClusterName.IsUnknown() && e.ClusterName.ValueString() == "") {
		diags.AddAttributeError(at.AtName("cluster_name"), "Invalid kubernetes provider configuration",
			"kubernetes.eks.cluster_name is required in the eks block: write the EKS cluster's name, e.g. cluster_name = aws_eks_cluster.main.name")
	}
	if r := e.Region; !r.IsNull() && !r.IsUnknown() && !awsRegionPattern.MatchString(r.ValueString()) {
		diags.AddAttributeError(at.AtName("region"), "Invalid kubernetes provider configuration",
			"kubernetes.eks.region "+quote(r.ValueString())+" is not an AWS region name: write it like us-east-1 or eu-central-1")
	}
	set := map[string]bool{
		"config_path": !m.ConfigPath.IsNull(), "config_context": !m.ConfigContext.IsNull(), "host": !m.Host.IsNull(), "token": !m.Token.IsNull(),
		"cluster_ca_certificate": !m.ClusterCACertificate.IsNull(), "client_certificate": !m.ClientCertificate.IsNull(),
		"client_key": !m.ClientKey.IsNull(), "insecure": !m.Insecure.IsNull(),
	}
	for _, name := range kubernetesEKSConflicts {
		if set[name] {
			diags.AddAttributeError(path.Root("kubernetes").AtName(name), "Invalid kubernetes provider configuration",
				"kubernetes."+name+" conflicts with kubernetes.eks, which takes the endpoint, CA and token from EKS: remove kubernetes."+name+
					", or remove the eks block to connect with a kubeconfig or host")
		}
	}
	return diags
}
