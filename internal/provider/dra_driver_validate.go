package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// ValidateConfig checks what the attributes' own validators cannot: that
// each feature gate is one the driver knows (an unknown one stops the
// plugin at start), and that an extended resource has the GPU DeviceClass
// to answer for it.
func (r *DRADriverResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var config draDriverModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !config.FeatureGates.IsNull() && !config.FeatureGates.IsUnknown() {
		for name := range config.FeatureGates.Elements() {
			at := path.Root("feature_gates").AtMapKey(name)
			if _, known := kube.DRADriverFeatureGates[name]; !known {
				resp.Diagnostics.AddAttributeError(at, "Unknown feature gate",
					fmt.Sprintf("feature_gates[%q]: the DRA driver %s has no such feature gate, and its kubelet plugin would refuse to start. "+
						"Known gates are: %s.", name, nvdra.DriverVersion, draFeatureGatesDescription()))
			}
		}
	}
	if !config.ExtendedResourceName.IsNull() && !config.DeviceClasses.IsNull() && !config.DeviceClasses.IsUnknown() &&
		!slices.Contains(stringsOf(ctx, config.DeviceClasses), nvdra.DeviceClassGPU) {
		resp.Diagnostics.AddAttributeError(path.Root("extended_resource_name"), "Extended resource without its DeviceClass",
			fmt.Sprintf("extended_resource_name is set on DeviceClass %s, which device_classes leaves out. Add %q to device_classes, "+
				"or remove extended_resource_name.", nvdra.DeviceClassGPU, nvdra.DeviceClassGPU))
	}
}

// ModifyPlan warns of an alpha feature gate turned on (here rather than
// in ValidateConfig, which Terraform runs twice per plan), and, when the
// cluster can be asked at plan time, that it does not serve Dynamic
// Resource Allocation: a warning, not an error, because the plan that
// `terraform destroy` runs first cannot be told from any other, and must
// not fail for a resource that cannot be created. The apply refuses
// before it writes anything.
func (r *DRADriverResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var gates types.Map
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("feature_gates"), &gates)...)
	for name, v := range gates.Elements() {
		on, _ := v.(types.Bool)
		if gate := kube.DRADriverFeatureGates[name]; gate.Stage == "alpha" && on.ValueBool() {
			resp.Diagnostics.AddAttributeWarning(path.Root("feature_gates").AtMapKey(name), "Alpha feature gate turned on",
				fmt.Sprintf("feature_gates[%q] turns on a gate that is alpha in the DRA driver %s (off by default): "+
					"it may change or go away in a later release, and is not meant for production.", name, nvdra.DriverVersion))
		}
	}
	err := r.clients.draAtPlan(ctx)
	var unavailable *kube.DRAUnavailableError
	if errors.As(err, &unavailable) {
		resp.Diagnostics.AddWarning("NVIDIA DRA driver cannot run on this cluster",
			"The apply will stop here: "+err.Error()+".")
	}
}

// draAtPlan asks the cluster whether it serves Dynamic Resource
// Allocation, within planNodeReadTimeout; nil when it cannot be asked (no
// provider configuration, kubernetes settings unknown until apply, no
// answer): a plan never fails or waits for a cluster that is not there yet.
func (c *Clients) draAtPlan(ctx context.Context) error {
	if c == nil || c.planReads == nil || c.planReads.kubernetesUnknown {
		return nil
	}
	cluster, err := c.Kubernetes()
	if err != nil {
		return nil
	}
	readCtx, cancel := context.WithTimeout(ctx, planNodeReadTimeout)
	defer cancel()
	err = cluster.RequireDRA(readCtx)
	var unavailable *kube.DRAUnavailableError
	if err != nil && !errors.As(err, &unavailable) {
		tflog.Debug(ctx, "could not ask the cluster at plan whether it serves DRA", map[string]any{"error": err.Error()})
		return nil
	}
	return err
}
