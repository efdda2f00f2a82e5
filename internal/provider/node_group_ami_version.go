package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

// checkAMIVersion refuses, at plan, an ami_type for which EKS publishes no
// AMI at the nodes' Kubernetes version: version when known, else the
// cluster's (DescribeCluster, read only for such an AMI type). Unknown
// values skip the check.
func (r *NodeGroupResource) checkAMIVersion(ctx context.Context, plan *nodeGroupModel, diags *diag.Diagnostics) {
	if plan.AMIType.IsUnknown() || !eks.AMITypeEnds(plan.AMIType.ValueString()) {
		return // an AMI type EKS publishes for every version (or not known yet)
	}
	version, where := plan.Version.ValueString(), "version"
	if plan.Version.IsNull() || plan.Version.IsUnknown() {
		if r.clients == nil || plan.ClusterName.IsUnknown() {
			return
		}
		summary := "checking gpu_node_group's ami_type against the cluster's Kubernetes version"
		client := r.clients.awsFor(ctx, summary, diags)
		if client == nil {
			return
		}
		var err error
		if version, err = client.ClusterVersion(ctx, plan.ClusterName.ValueString()); err != nil {
			diags.AddWarning(summary, err.Error()+"; the AMI type is not checked against it.")
			return
		}
		where = "the version of cluster " + quote(plan.ClusterName.ValueString())
	}
	if why := eks.AMITypeUnavailable(plan.AMIType.ValueString(), version); why != "" {
		diags.AddAttributeError(path.Root("ami_type"), "AMI type not offered for this Kubernetes version",
			"ami_type "+quote(plan.AMIType.ValueString())+" at Kubernetes "+version+" ("+where+"): "+why+
				". Fix: set ami_type to \""+eks.AMITypeAL2023x86NVIDIA+"\" or \""+eks.AMITypeBottlerocketx86NVIDIA+
				"\" (a new group: changing ami_type replaces it), or keep an AL2 group on Kubernetes 1.32 or earlier.")
	}
}
