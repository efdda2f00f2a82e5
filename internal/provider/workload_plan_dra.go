package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// This file checks, at plan, a gpu block that uses DRA or asks for a least
// CUDA version against what the cluster has, when the cluster can be read
// quickly (as workload_plan_offer.go, within planNodeReadTimeout; an
// unreachable cluster or unknown kubernetes settings mean no check):
//   - a cluster that does not serve DRA is an error naming its version;
//   - a choice (the gpu block's own criteria or an alternative) that no
//     node's devices can ever meet is a warning, and none that any node
//     can meet an error naming the nodes and what devices they have;
//   - a min_cuda_version no node's driver supports is an error naming the
//     nodes' CUDA versions.
// Who holds the devices now is not looked at: that is the apply's wait.
// A cluster that publishes no NVIDIA devices at all, or lacks the driver's
// DeviceClass, is a warning: the driver may be deployed in the same apply.

var (
	gpuAllocationPath  = gpuBlockPath.AtName("allocation")
	gpuMinCUDAPath     = gpuBlockPath.AtName("min_cuda_version")
	gpuAlternativePath = gpuBlockPath.AtName("alternative")
)

// checkGPUPlacement adds this file's diagnostics to resp.
func (r *WorkloadResource) checkGPUPlacement(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var planned, prior types.Object
	if d := req.Plan.GetAttribute(ctx, gpuBlockPath, &planned); d.HasError() || planned.IsNull() || planned.IsUnknown() {
		return
	}
	if !req.State.Raw.IsNull() {
		if d := req.State.GetAttribute(ctx, gpuBlockPath, &prior); !d.HasError() && prior.Equal(planned) {
			return // unchanged: checked when it was planned
		}
	}
	var model workloadGPUModel
	if d := planned.As(ctx, &model, basetypes.ObjectAsOptions{}); d.HasError() || model.Allocation.IsUnknown() || model.MinCUDAVersion.IsUnknown() {
		return // a value unknown until apply
	}
	g := model.toSpec()
	if !g.DRA() && g.MinCUDA == nil {
		return
	}
	cluster, ok := r.clients.kubernetesAtPlan(ctx)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, planNodeReadTimeout)
	defer cancel()
	if g.DRA() {
		checkDRAPlacement(ctx, cluster, g, resp)
		return
	}
	versions, err := cluster.NodeCUDAVersions(ctx)
	if err != nil {
		tflog.Debug(ctx, "could not read the nodes' CUDA versions at plan", map[string]any{"error": err.Error()})
		return
	}
	if short := kube.CUDAShortfall(versions, *g.MinCUDA); short != "" {
		resp.Diagnostics.AddAttributeError(gpuMinCUDAPath, "No node supports gpu.min_cuda_version "+quote(g.MinCUDA.String()),
			short+" (GPU Feature Discovery's nvidia.com/cuda.runtime-version labels). Lower min_cuda_version to what the "+
				"image needs (CUDA minor version compatibility lets an application built with a newer 12.x toolkit run on an older 12.x driver), "+
				"or upgrade the nodes' NVIDIA driver.")
	}
}

func checkDRAPlacement(ctx context.Context, cluster *kube.Cluster, g kube.WorkloadGPU, resp *resource.ModifyPlanResponse) {
	var unavailable *kube.DRAUnavailableError
	var noClass *kube.MissingDeviceClassError
	placement, err := cluster.PlaceDRA(ctx, g)
	switch {
	case errors.As(err, &unavailable):
		resp.Diagnostics.AddAttributeError(gpuAllocationPath, "The cluster does not serve Dynamic Resource Allocation",
			unavailable.Error()+`. Set gpu.allocation = "device_plugin".`)
		return
	case errors.As(err, &noClass):
		resp.Diagnostics.AddAttributeWarning(gpuAllocationPath, "NVIDIA's DRA driver is not deployed",
			"The cluster has no DeviceClass "+noClass.Name+". The workload's pods cannot be scheduled until it is (gpu_dra_driver deploys it), unless it is deployed in this apply.")
		return
	case err != nil:
		tflog.Debug(ctx, "could not read the DRA devices at plan", map[string]any{"error": err.Error()})
		return
	}
	if len(placement.Nodes) == 0 {
		resp.Diagnostics.AddAttributeWarning(gpuAllocationPath, "No node publishes NVIDIA DRA devices",
			placement.NodesSummary()+" The workload's pods cannot be scheduled until one does, unless the driver is deployed in this apply.")
		return
	}
	if g.MinCUDA != nil {
		if short := kube.CUDAShortfall(placement.CUDA, *g.MinCUDA); short != "" {
			resp.Diagnostics.AddAttributeError(gpuMinCUDAPath, "No node supports gpu.min_cuda_version "+quote(g.MinCUDA.String()),
				short+" (the cudaDriverVersion of their DRA devices). Lower min_cuda_version to what the image needs "+
					"(CUDA minor version compatibility lets an application built with a newer 12.x toolkit run on an older 12.x driver), "+
					"or upgrade the nodes' NVIDIA driver.")
			return
		}
	}
	if !placement.Satisfiable() {
		detail := "No node has enough devices for any choice of the gpu block, whoever holds them: "
		for i := range placement.Choices {
			if i > 0 {
				detail += " "
			}
			detail += fmt.Sprintf("Choice %d: %s", i+1, placement.Unsatisfiable(i))
		}
		resp.Diagnostics.AddAttributeError(gpuBlockPath, "No node can ever serve the gpu block", detail+
			" Change the gpu block (products, min_memory_gib, min_compute_capability, mig_profile, count) or add an alternative that the nodes have.")
		return
	}
	for i := range placement.Choices {
		msg := placement.Unsatisfiable(i)
		if msg == "" {
			continue
		}
		at, name := gpuBlockPath, "the gpu block's own criteria"
		if i > 0 {
			at, name = gpuAlternativePath.AtListIndex(i-1), fmt.Sprintf("gpu.alternative[%d]", i-1)
		}
		resp.Diagnostics.AddAttributeWarning(at, "No node can serve "+name,
			msg+" The scheduler moves on to the next choice; other choices can be served.")
	}
}

// kubernetesAtPlan is the cluster to read at plan, or false when there is
// none to read: no provider configuration, or kubernetes settings unknown
// until apply. Each reason is logged at debug level.
func (c *Clients) kubernetesAtPlan(ctx context.Context) (*kube.Cluster, bool) {
	if c == nil || c.planReads == nil || c.planReads.kubernetesUnknown {
		tflog.Debug(ctx, "not reading the cluster at plan: no provider configuration or kubernetes settings unknown until apply")
		return nil, false
	}
	cluster, err := c.Kubernetes()
	if err != nil {
		tflog.Debug(ctx, "not reading the cluster at plan: no Kubernetes client", map[string]any{"error": err.Error()})
		return nil, false
	}
	return cluster, true
}
