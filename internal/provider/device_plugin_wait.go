package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// countTimeout bounds the reads that fill the computed counts, which run
// even when a wait has used up the timeout.
const countTimeout = 30 * time.Second

// waitAndCount waits as m asks (rollout, then allocatable GPUs) within
// ctx, whose deadline is timeout (from timeouts.<op>), then fills m's
// counts. A wait that fails becomes an error naming the nodes not ready.
func (r *DevicePluginResource) waitAndCount(ctx context.Context, client kubernetes.Interface, spec kube.DevicePluginSpec, m *devicePluginModel, timeout time.Duration, op, summary string, diags *diag.Diagnostics) {
	started := time.Now()
	waitErr := func(what string, err error) {
		if kube.IsNotReady(err) {
			diags.AddError(summary, fmt.Sprintf("Waited %s (timeouts.%s) for %s. %v", timeout, op, what, err))
			return
		}
		diags.AddError(summary, fmt.Sprintf("waiting for %s: %v", what, err))
	}
	ok := true
	if m.WaitForRollout.ValueBool() {
		for _, name := range spec.DaemonSetNames() {
			waited := startClusterWait(ctx, "daemonset_rollout", spec.Namespace+"/"+name)
			_, err := kube.WaitForDaemonSetRollout(ctx, client, spec.Namespace, name)
			waited(err)
			if err != nil {
				waitErr("DaemonSet "+spec.Namespace+"/"+name+" to roll out", err)
				ok = false
				break
			}
		}
		tflog.Info(ctx, "device plugin rolled out", map[string]any{"id": spec.ID(), "elapsed": time.Since(started).String()})
	}
	if ok && m.WaitForAllocatable.ValueBool() {
		waited := startClusterWait(ctx, "gpus_allocatable", spec.ID())
		err := kube.WaitForNodesAllocatable(ctx, client, spec)
		waited(err)
		if err != nil {
			waitErr("allocatable "+spec.Config.AdvertisedGPUResource()+" on every node running the plugin", err)
		}
		tflog.Info(ctx, "GPUs allocatable", map[string]any{"id": spec.ID(), "elapsed": time.Since(started).String()})
	}

	countCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), countTimeout)
	defer cancel()
	status, err := kube.DevicePluginStatusOf(countCtx, client, spec)
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

// keepEquivalentQuantities keeps the prior spelling of a resources
// quantity that the API server wrote differently ("0.5" read back as
// "500m"), so that it is no diff.
func keepEquivalentQuantities(read, prior types.Object) types.Object {
	if read.IsNull() || prior.IsNull() || prior.IsUnknown() {
		return read
	}
	attrs := read.Attributes()
	priorAttrs := prior.Attributes()
	out := map[string]types.Map{}
	for _, key := range []string{"requests", "limits"} {
		readMap, _ := attrs[key].(types.Map)
		priorMap, _ := priorAttrs[key].(types.Map)
		out[key] = readMap
		if readMap.IsNull() || priorMap.IsNull() {
			continue
		}
		elems := readMap.Elements()
		merged := map[string]string{}
		for name, v := range elems {
			if value, ok := v.(types.String); ok {
				merged[name] = value.ValueString()
			}
			p, ok := priorMap.Elements()[name].(types.String)
			if !ok {
				continue
			}
			a, errA := resource.ParseQuantity(merged[name])
			b, errB := resource.ParseQuantity(p.ValueString())
			if errA == nil && errB == nil && a.Cmp(b) == 0 {
				merged[name] = p.ValueString()
			}
		}
		out[key] = stringMapValue(merged, types.MapNull(types.StringType))
	}
	return types.ObjectValueMust(devicePluginResourcesType, map[string]attr.Value{"requests": out["requests"], "limits": out["limits"]})
}

// validateRequestsWithinLimits rejects a request above its limit, which
// the API server would refuse only at apply.
func validateRequestsWithinLimits(ctx context.Context, resources types.Object) diag.Diagnostics {
	var diags diag.Diagnostics
	if resources.IsNull() || resources.IsUnknown() {
		return diags
	}
	var requests, limits map[string]types.String
	attrs := resources.Attributes()
	for key, target := range map[string]*map[string]types.String{"requests": &requests, "limits": &limits} {
		if m, ok := attrs[key].(types.Map); ok && !m.IsNull() && !m.IsUnknown() {
			diags.Append(m.ElementsAs(ctx, target, false)...)
		}
	}
	for name, request := range requests {
		limit, ok := limits[name]
		if !ok || request.IsUnknown() || limit.IsUnknown() {
			continue
		}
		r, errR := resource.ParseQuantity(request.ValueString())
		l, errL := resource.ParseQuantity(limit.ValueString())
		if errR == nil && errL == nil && r.Cmp(l) > 0 {
			diags.AddAttributeError(path.Root("resources").AtName("requests").AtMapKey(name), "Request above limit",
				fmt.Sprintf("resources.requests[%q] %s is more than resources.limits[%q] %s: Kubernetes rejects such a container. "+
					"Lower the request or raise the limit.", name, request.ValueString(), name, limit.ValueString()))
		}
	}
	return diags
}
