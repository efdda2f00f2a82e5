package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// countTimeout bounds the reads that fill the computed counts, which run
// even when a wait has used up the timeout.
const countTimeout = 30 * time.Second

// waitAndCount waits as m asks (rollout, then allocatable GPUs) within
// ctx, whose deadline is timeout (from timeouts.<op>), then fills m's
// counts. A wait that fails becomes an error naming the nodes not ready.
func (r *DevicePluginResource) waitAndCount(ctx context.Context, cluster *kube.Cluster, spec kube.DevicePluginSpec, m *devicePluginModel, timeout time.Duration, op, summary string, diags *diag.Diagnostics) {
	waitErr := func(what string, err error) {
		if kube.IsNotReady(err) {
			diags.AddError(summary, fmt.Sprintf("Waited %s (timeouts.%s) for %s. %v", timeout, op, what, err))
			return
		}
		diags.AddError(summary, fmt.Sprintf("waiting for %s: %v", what, err))
	}
	ok := true
	if spec.DeploysNFD() && (m.WaitForRollout.ValueBool() || m.WaitForAllocatable.ValueBool()) {
		// The plugin's GPU node affinity admits fresh nodes only once NFD
		// has labeled them: its rollout means nothing before.
		if err := cluster.WaitForNodeFeatureDiscovery(ctx, spec); err != nil {
			waitErr("Node Feature Discovery to label the nodes", err)
			ok = false
		}
	}
	if ok && m.WaitForRollout.ValueBool() {
		for _, name := range spec.DaemonSetNames() {
			if err := cluster.WaitForDaemonSetRollout(ctx, spec.Namespace, name); err != nil {
				waitErr("DaemonSet "+spec.Namespace+"/"+name+" to roll out", err)
				ok = false
				break
			}
		}
	}
	if ok && m.WaitForAllocatable.ValueBool() {
		if err := cluster.WaitForNodesAllocatable(ctx, spec); err != nil {
			waitErr("allocatable "+spec.Config.AdvertisedGPUResource()+" on every node running the plugin", err)
			ok = false
		}
	}
	if ok && m.WaitForAllocatable.ValueBool() && spec.HealthAgent != nil {
		if err := cluster.WaitForHealthReported(ctx, spec); err != nil {
			waitErr("the GPU health agent's "+string(gpuhealth.ConditionType)+" condition on every node it runs on", err)
			ok = false
		}
	}
	if ok && m.WaitForAllocatable.ValueBool() {
		if err := cluster.WaitForGFDLabels(ctx, spec); err != nil {
			if kube.IsNotReady(err) && !spec.DeploysNFD() {
				err = fmt.Errorf("%w; to deploy it with GFD, set gpu_feature_discovery.deploy_node_feature_discovery = true", err)
			}
			waitErr("GPU Feature Discovery's labels on every node it runs on", err)
		}
	}

	countCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), countTimeout)
	defer cancel()
	status, err := cluster.DevicePluginStatusOf(countCtx, spec)
	if err != nil {
		diags.AddWarning(summary, "counting the plugin's nodes and GPUs: "+err.Error())
		return
	}
	m.setStatus(spec.Config, status)
	if status.DesiredNodes == 0 {
		diags.AddWarning(summary, "The plugin's DaemonSet selects no node: no node matches node_selector, tolerations and the GPU "+
			"node affinity (nodes labeled nvidia.com/gpu.present=true or feature.node.kubernetes.io/pci-10de.present=true). "+
			"No GPU was made allocatable; check the labels of your GPU nodes (`kubectl get nodes --show-labels`).")
	}
}
