package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

var _ resource.ResourceWithModifyPlan = &DevicePluginResource{}

// gfdDeployNFDPath is where a plan turns Node Feature Discovery off.
var gfdDeployNFDPath = path.Root("gpu_feature_discovery").AtName("deploy_node_feature_discovery")

// ModifyPlan warns when GPU Feature Discovery is to run without the Node
// Feature Discovery it needs: deploy_node_feature_discovery = false on a
// cluster that serves no NFD API. A warning, not an error: NFD may come in
// the same apply. The cluster is asked only when that setting is new or
// changed, within planNodeReadTimeout; a cluster that does not answer
// means no warning.
func (r *DevicePluginResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.clients == nil {
		return // destroy, or no provider configuration (validate)
	}
	var plan devicePluginModel
	if resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...); resp.Diagnostics.HasError() {
		return
	}
	gfd := plan.GFD
	if gfd == nil || !gfd.Enabled.ValueBool() || gfd.DeployNFD.IsUnknown() || gfd.DeployNFD.ValueBool() {
		return
	}
	if !req.State.Raw.IsNull() {
		var state devicePluginModel
		if d := req.State.Get(ctx, &state); !d.HasError() && state.GFD != nil && !state.GFD.DeployNFD.ValueBool() && !state.GFD.DeployNFD.IsNull() {
			return // unchanged: warned about when it was planned
		}
	}
	if reads := r.clients.planReads; reads == nil || reads.kubernetesUnknown {
		return
	}
	cluster, err := r.clients.Kubernetes()
	if err != nil {
		return
	}
	type answer struct {
		installed bool
		err       error
	}
	answered := make(chan answer, 1)
	go func() {
		installed, err := cluster.NodeFeatureDiscoveryInstalled(ctx)
		answered <- answer{installed, err}
	}()
	readCtx, cancel := context.WithTimeout(ctx, planNodeReadTimeout)
	defer cancel()
	select {
	case <-readCtx.Done():
		tflog.Debug(ctx, "the cluster did not say in time whether it runs Node Feature Discovery: no warning")
	case a := <-answered:
		if a.err != nil {
			tflog.Debug(ctx, "could not ask whether the cluster runs Node Feature Discovery: no warning", map[string]any{"error": a.err.Error()})
			return
		}
		if !a.installed {
			resp.Diagnostics.AddAttributeWarning(gfdDeployNFDPath, "The cluster runs no Node Feature Discovery",
				"GPU Feature Discovery writes its labels into /etc/kubernetes/node-feature-discovery/features.d, and only Node Feature "+
					"Discovery turns them into node labels; this cluster serves no nfd.k8s-sigs.io/v1alpha1 NodeFeature, so no node will get "+
					"them and a gpu_workload that selects by products, min_memory_gib or min_compute_capability will not schedule. "+
					"Remove deploy_node_feature_discovery = false to deploy NFD with GFD, or install NFD before this apply.")
		}
	}
}
