package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// waitAndCount waits as m asks (rollout, then every plugin node's
// ResourceSlices) within ctx, whose deadline is timeout (from
// timeouts.<op>), then fills m's counts. A wait that fails becomes an
// error naming the nodes not ready.
func (r *DRADriverResource) waitAndCount(ctx context.Context, cluster *kube.Cluster, spec kube.DRADriverSpec, m *draDriverModel, timeout time.Duration, op, summary string, diags *diag.Diagnostics) {
	waitErr := func(what string, err error) {
		if kube.IsNotReady(err) {
			diags.AddError(summary, fmt.Sprintf("Waited %s (timeouts.%s) for %s. %v", timeout, op, what, err))
			return
		}
		diags.AddError(summary, fmt.Sprintf("waiting for %s: %v", what, err))
	}
	ok := true
	if m.WaitForRollout.ValueBool() {
		if err := cluster.WaitForDaemonSetRollout(ctx, spec.Namespace, spec.DaemonSetName()); err != nil {
			waitErr("DaemonSet "+spec.Namespace+"/"+spec.DaemonSetName()+" to roll out", err)
			ok = false
		}
	}
	if ok && m.WaitForResourceSlices.ValueBool() {
		if err := cluster.WaitForResourceSlices(ctx, spec); err != nil {
			waitErr("every node running the kubelet plugin to publish its ResourceSlices", err)
		}
	}

	countCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), countTimeout)
	defer cancel()
	status, err := cluster.DRADriverStatusOf(countCtx, spec)
	if err != nil {
		diags.AddWarning(summary, "counting the kubelet plugin's nodes and devices: "+err.Error())
		return
	}
	m.setStatus(status)
	if status.DesiredNodes == 0 {
		diags.AddWarning(summary, "The kubelet plugin's DaemonSet selects no node: no node matches node_selector, tolerations and the GPU "+
			"node affinity (nodes labeled nvidia.com/gpu.present=true, feature.node.kubernetes.io/pci-10de.present=true or "+
			"feature.node.kubernetes.io/cpu-model.vendor_id=NVIDIA). No GPU was published; check the labels of your GPU nodes "+
			"(`kubectl get nodes --show-labels`).")
	}
	if len(status.DevicePluginNodes) > 0 {
		diags.AddWarning(summary, fmt.Sprintf("Nodes running the DRA driver also advertise allocatable nvidia.com/gpu, so a device plugin "+
			"hands out the same GPUs there and one GPU may go to two pods: %s. Give DRA nodes and device-plugin nodes different labels, "+
			"and node_selector here and on gpu_device_plugin that keep them apart.", strings.Join(status.DevicePluginNodes, ", ")))
	}
}
