package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// ValidateConfig checks what involves more than one attribute; each
// attribute's own validators check the rest.
func (r *WorkloadResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	get := func(p path.Path, target any) {
		resp.Diagnostics.Append(req.Config.GetAttribute(ctx, p, target)...)
	}
	var kind types.String
	var job, deployment types.Object
	var waitCompletion, waitRollout types.Bool
	get(path.Root("kind"), &kind)
	get(path.Root("job"), &job)
	get(path.Root("deployment"), &deployment)
	get(path.Root("wait_for_completion"), &waitCompletion)
	get(path.Root("wait_for_rollout"), &waitRollout)
	if resp.Diagnostics.HasError() {
		return
	}
	if !kind.IsUnknown() && !kind.IsNull() {
		k := kind.ValueString()
		if k != workloadKindJob && !job.IsNull() {
			resp.Diagnostics.AddAttributeError(path.Root("job"), "job block with kind = "+quote(k),
				"The job block only applies to kind = \"job\". Remove it, or use a deployment block for a deployment.")
		}
		if k != workloadKindDeployment && !deployment.IsNull() {
			resp.Diagnostics.AddAttributeError(path.Root("deployment"), "deployment block with kind = "+quote(k),
				"The deployment block only applies to kind = \"deployment\". Remove it, or use a job block for a job.")
		}
		if k != workloadKindJob && !waitCompletion.IsNull() {
			resp.Diagnostics.AddAttributeError(path.Root("wait_for_completion"), "wait_for_completion with kind = "+quote(k),
				"wait_for_completion only applies to kind = \"job\"; a deployment waits with wait_for_rollout.")
		}
		if k != workloadKindDeployment && !waitRollout.IsNull() {
			resp.Diagnostics.AddAttributeError(path.Root("wait_for_rollout"), "wait_for_rollout with kind = "+quote(k),
				"wait_for_rollout only applies to kind = \"deployment\"; a job waits with wait_for_completion.")
		}
	}
	validateWorkloadGPU(ctx, req.Config, &resp.Diagnostics)
	validateWorkloadResources(ctx, req.Config, &resp.Diagnostics)
	validateWorkloadVolumes(ctx, req.Config, &resp.Diagnostics)
	validateWorkloadTolerations(ctx, req.Config, &resp.Diagnostics)
}

func validateWorkloadGPU(ctx context.Context, config tfsdk.Config, diags *diag.Diagnostics) {
	gpu := gpuBlockPath
	var shared types.Bool
	var mig, minCC types.String
	var minGiB types.Int64
	var products types.List
	diags.Append(config.GetAttribute(ctx, gpu.AtName("shared"), &shared)...)
	diags.Append(config.GetAttribute(ctx, gpuMIGProfilePath, &mig)...)
	diags.Append(config.GetAttribute(ctx, gpu.AtName("min_compute_capability"), &minCC)...)
	diags.Append(config.GetAttribute(ctx, gpu.AtName("min_memory_gib"), &minGiB)...)
	diags.Append(config.GetAttribute(ctx, gpuProductsPath, &products)...)
	if diags.HasError() {
		return
	}
	validateGPUAllocation(ctx, config, shared, diags)
	if shared.ValueBool() && !mig.IsNull() && !mig.IsUnknown() {
		diags.AddAttributeError(gpuMIGProfilePath, "gpu.mig_profile conflicts with gpu.shared",
			"A pod asks either for a share of a time-sliced GPU (shared = true, resource nvidia.com/gpu.shared) or for MIG instances "+
				"(mig_profile, resource nvidia.com/mig-<profile>), not both. Remove one of them.")
	}
	if products.IsNull() || products.IsUnknown() {
		return
	}
	var names []string
	for _, v := range products.Elements() {
		s, ok := stringValueOf(v)
		if !ok {
			return // an unknown product: nothing to compare yet
		}
		names = append(names, s)
	}
	if w := productsContradiction(names, minGiB, minCC); w != "" {
		diags.AddAttributeWarning(gpuProductsPath, "No GPU in gpu.products meets the other gpu criteria", w)
	}
}

// validateGPUAllocation checks what only one way of allocating offers:
// alternatives are DRA's (firstAvailable), sharing the device plugin's.
func validateGPUAllocation(ctx context.Context, config tfsdk.Config, shared types.Bool, diags *diag.Diagnostics) {
	var allocation types.String
	var alternatives types.List
	diags.Append(config.GetAttribute(ctx, gpuAllocationPath, &allocation)...)
	diags.Append(config.GetAttribute(ctx, gpuAlternativePath, &alternatives)...)
	if diags.HasError() || allocation.IsUnknown() {
		return
	}
	dra := allocation.ValueString() == string(kube.AllocateDRA)
	if !dra && len(alternatives.Elements()) > 0 {
		diags.AddAttributeError(gpuAlternativePath, "gpu.alternative without gpu.allocation = \"dra\"",
			"Alternatives become a DRA claim's firstAvailable list; the device plugin's nvidia.com/gpu limit has no alternatives. "+
				"Set gpu.allocation = \"dra\" (a cluster with NVIDIA's DRA driver), or remove the alternative blocks.")
	}
	if dra && shared.ValueBool() {
		diags.AddAttributeError(gpuBlockPath.AtName("shared"), "gpu.shared with gpu.allocation = \"dra\"",
			"A share of a time-sliced GPU is the device plugin's nvidia.com/gpu.shared resource; this provider does not yet write "+
				"the DRA driver's sharing configuration. Remove shared, or set gpu.allocation = \"device_plugin\".")
	}
}

// productsContradiction says why no product in names, all known to
// gpulabels.KnownProducts, meets min_memory_gib or min_compute_capability,
// or "" when one might (or a product is unknown).
func productsContradiction(names []string, minGiB types.Int64, minCC types.String) string {
	var facts []string
	for _, name := range names {
		p, ok := gpulabels.KnownProducts[strings.TrimSuffix(name, gpulabels.SharedProductSuffix)]
		if !ok {
			return ""
		}
		cc := kube.ComputeCapability{Major: p.ComputeMajor, Minor: p.ComputeMinor}
		memoryOK := minGiB.IsNull() || minGiB.IsUnknown() || p.MemoryMiB >= minGiB.ValueInt64()*1024
		ccOK := true
		if want, err := kube.ParseComputeCapability(minCC.ValueString()); err == nil {
			ccOK = cc.AtLeast(want)
		}
		if memoryOK && ccOK {
			return ""
		}
		facts = append(facts, fmt.Sprintf("%s has %d MiB (%.1f GiB) and compute capability %s", name, p.MemoryMiB, float64(p.MemoryMiB)/1024, cc))
	}
	if len(facts) == 0 {
		return ""
	}
	var wanted []string
	if !minGiB.IsNull() && !minGiB.IsUnknown() {
		wanted = append(wanted, fmt.Sprintf("min_memory_gib = %d (%d MiB)", minGiB.ValueInt64(), minGiB.ValueInt64()*1024))
	}
	if !minCC.IsNull() && !minCC.IsUnknown() {
		wanted = append(wanted, "min_compute_capability = "+quote(minCC.ValueString()))
	}
	return "No GPU in gpu.products meets " + strings.Join(wanted, " and ") + ": " + strings.Join(facts, "; ") +
		". No node will match and the workload will not be scheduled. GPU memory is what the driver reports, less than the marketing size: " +
		"lower min_memory_gib or add products."
}

// validateWorkloadResources checks that no request exceeds its limit.
func validateWorkloadResources(ctx context.Context, config tfsdk.Config, diags *diag.Diagnostics) {
	c := path.Root("container")
	for _, pair := range [][2]string{{"cpu_request", "cpu_limit"}, {"memory_request", "memory_limit"}} {
		var request, limit types.String
		diags.Append(config.GetAttribute(ctx, c.AtName(pair[0]), &request)...)
		diags.Append(config.GetAttribute(ctx, c.AtName(pair[1]), &limit)...)
		rq, err1 := k8sresource.ParseQuantity(request.ValueString())
		lq, err2 := k8sresource.ParseQuantity(limit.ValueString())
		if err1 != nil || err2 != nil || request.IsUnknown() || limit.IsUnknown() {
			continue
		}
		if rq.Cmp(lq) > 0 {
			diags.AddAttributeError(c.AtName(pair[0]), "container."+pair[0]+" exceeds container."+pair[1],
				fmt.Sprintf("container.%s %s is more than container.%s %s; Kubernetes requires a request to be at most its limit.",
					pair[0], request.ValueString(), pair[1], limit.ValueString()))
		}
	}
}

type volumeConfig struct {
	Name      types.String `tfsdk:"name"`
	ClaimName types.String `tfsdk:"claim_name"`
	MountPath types.String `tfsdk:"mount_path"`
	ReadOnly  types.Bool   `tfsdk:"read_only"`
}

// validateWorkloadVolumes checks volume names and mount paths are unique and
// do not collide with the /dev/shm volume shm_size adds.
func validateWorkloadVolumes(ctx context.Context, config tfsdk.Config, diags *diag.Diagnostics) {
	var list types.List
	var shm types.String
	diags.Append(config.GetAttribute(ctx, path.Root("volume"), &list)...)
	diags.Append(config.GetAttribute(ctx, path.Root("shm_size"), &shm)...)
	if diags.HasError() || list.IsNull() || list.IsUnknown() {
		return
	}
	var volumes []volumeConfig
	if d := list.ElementsAs(ctx, &volumes, true); d.HasError() {
		return
	}
	var names, paths []string
	for i, v := range volumes {
		p := path.Root("volume").AtListIndex(i)
		name, mount := v.Name.ValueString(), strings.TrimSuffix(v.MountPath.ValueString(), "/")
		if !v.Name.IsUnknown() && slices.Contains(names, name) {
			diags.AddAttributeError(p.AtName("name"), "Duplicate volume name", "volume name "+quote(name)+" is used twice; each volume needs its own name.")
		}
		if !v.MountPath.IsUnknown() && slices.Contains(paths, mount) {
			diags.AddAttributeError(p.AtName("mount_path"), "Duplicate mount path", "mount_path "+quote(mount)+" is used by two volumes.")
		}
		if !shm.IsNull() {
			if name == kube.ShmVolumeName {
				diags.AddAttributeError(p.AtName("name"), "Reserved volume name", "volume name "+quote(kube.ShmVolumeName)+" is the one shm_size adds; choose another.")
			}
			if mount == kube.ShmMountPath {
				diags.AddAttributeError(p.AtName("mount_path"), "Mount path taken by shm_size", kube.ShmMountPath+" is where shm_size mounts its memory-backed volume; use one or the other.")
			}
		}
		names, paths = append(names, name), append(paths, mount)
	}
}

type tolerationConfig struct {
	Key               types.String `tfsdk:"key"`
	Operator          types.String `tfsdk:"operator"`
	Value             types.String `tfsdk:"value"`
	Effect            types.String `tfsdk:"effect"`
	TolerationSeconds types.Int64  `tfsdk:"toleration_seconds"`
}

// validateWorkloadTolerations applies the API server's toleration rules.
func validateWorkloadTolerations(ctx context.Context, config tfsdk.Config, diags *diag.Diagnostics) {
	var list types.List
	diags.Append(config.GetAttribute(ctx, path.Root("tolerations"), &list)...)
	if diags.HasError() || list.IsNull() || list.IsUnknown() {
		return
	}
	var tolerations []tolerationConfig
	if d := list.ElementsAs(ctx, &tolerations, true); d.HasError() {
		return
	}
	for i, t := range tolerations {
		p := path.Root("tolerations").AtListIndex(i)
		if t.Operator.ValueString() == "Exists" && t.Value.ValueString() != "" {
			diags.AddAttributeError(p.AtName("value"), "Toleration value with operator Exists",
				"A toleration with operator = \"Exists\" matches any value of the key; remove value, or use operator = \"Equal\".")
		}
		if t.Key.IsNull() && !t.Operator.IsUnknown() && t.Operator.ValueString() != "Exists" {
			diags.AddAttributeError(p.AtName("key"), "Toleration without key",
				"A toleration without a key must have operator = \"Exists\" (it then tolerates every taint).")
		}
		if !t.TolerationSeconds.IsNull() && !t.Effect.IsUnknown() && t.Effect.ValueString() != "NoExecute" {
			diags.AddAttributeError(p.AtName("toleration_seconds"), "toleration_seconds without effect NoExecute",
				"toleration_seconds only applies to effect = \"NoExecute\" taints, which evict running pods.")
		}
	}
}
