package provider

import (
	"context"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// draDriverModel is gpu_dra_driver's state.
type draDriverModel struct {
	ID                    types.String   `tfsdk:"id"`
	OwnerID               types.String   `tfsdk:"owner_id"`
	Namespace             types.String   `tfsdk:"namespace"`
	DeleteNamespace       types.Bool     `tfsdk:"delete_namespace_if_not_empty"`
	Name                  types.String   `tfsdk:"name"`
	Image                 types.String   `tfsdk:"image"`
	ImagePullPolicy       types.String   `tfsdk:"image_pull_policy"`
	NodeSelector          types.Map      `tfsdk:"node_selector"`
	GPUNodeAffinity       types.Bool     `tfsdk:"gpu_node_affinity"`
	Tolerations           types.List     `tfsdk:"tolerations"`
	PriorityClassName     types.String   `tfsdk:"priority_class_name"`
	DriverRoot            types.String   `tfsdk:"driver_root"`
	LogVerbosity          types.Int64    `tfsdk:"log_verbosity"`
	FeatureGates          types.Map      `tfsdk:"feature_gates"`
	DeviceClasses         types.Set      `tfsdk:"device_classes"`
	ExtendedResourceName  types.String   `tfsdk:"extended_resource_name"`
	WaitForRollout        types.Bool     `tfsdk:"wait_for_rollout"`
	WaitForResourceSlices types.Bool     `tfsdk:"wait_for_resource_slices"`
	DesiredNodes          types.Int64    `tfsdk:"desired_nodes"`
	ReadyNodes            types.Int64    `tfsdk:"ready_nodes"`
	PublishedNodes        types.Int64    `tfsdk:"published_nodes"`
	PublishedDevices      types.Int64    `tfsdk:"published_devices"`
	Timeouts              timeouts.Value `tfsdk:"timeouts"`
}

// toSpec turns a plan (all values known) into what to deploy.
func (m *draDriverModel) toSpec(ctx context.Context) (kube.DRADriverSpec, diag.Diagnostics) {
	var diags diag.Diagnostics
	s := kube.DRADriverSpec{
		Namespace:            m.Namespace.ValueString(),
		Name:                 m.Name.ValueString(),
		Image:                m.Image.ValueString(),
		ImagePullPolicy:      corev1.PullPolicy(m.ImagePullPolicy.ValueString()),
		NodeSelector:         stringMapOf(m.NodeSelector),
		GPUNodeAffinity:      m.GPUNodeAffinity.ValueBool(),
		PriorityClassName:    m.PriorityClassName.ValueString(),
		DriverRoot:           m.DriverRoot.ValueString(),
		LogVerbosity:         int(m.LogVerbosity.ValueInt64()),
		ExtendedResourceName: m.ExtendedResourceName.ValueString(),
	}
	var tolerations []tolerationModel
	diags.Append(m.Tolerations.ElementsAs(ctx, &tolerations, false)...)
	s.Tolerations = tolerationsToKube(tolerations)
	if !m.FeatureGates.IsNull() && !m.FeatureGates.IsUnknown() {
		diags.Append(m.FeatureGates.ElementsAs(ctx, &s.FeatureGates, false)...)
	}
	// In the chart's order, whatever the set's.
	chosen := stringsOf(ctx, m.DeviceClasses)
	for _, class := range kube.DRADeviceClasses {
		if slices.Contains(chosen, class) {
			s.DeviceClasses = append(s.DeviceClasses, class)
		}
	}
	return s, diags
}

// setFromLive writes what the cluster has into m, keeping m's spelling
// where the cluster cannot tell values apart (an empty map). m holds the
// prior state, or only the ID parts on import.
func (m *draDriverModel) setFromLive(live kube.DRADriverLive) {
	s := live.Spec
	m.ID = types.StringValue(s.ID())
	m.Namespace, m.Name = types.StringValue(s.Namespace), types.StringValue(s.Name)
	m.Image = types.StringValue(s.Image)
	m.ImagePullPolicy = types.StringValue(string(s.ImagePullPolicy))
	m.NodeSelector = stringMapValue(s.NodeSelector, m.NodeSelector)
	m.GPUNodeAffinity = types.BoolValue(s.GPUNodeAffinity)
	m.Tolerations = tolerationsListValue(s.Tolerations)
	m.PriorityClassName = types.StringValue(s.PriorityClassName)
	m.DriverRoot = types.StringValue(s.DriverRoot)
	m.LogVerbosity = types.Int64Value(int64(s.LogVerbosity))
	m.FeatureGates = boolMapValue(s.FeatureGates, m.FeatureGates)
	m.DeviceClasses = stringSetValue(s.DeviceClasses)
	m.ExtendedResourceName = stringOrNull(s.ExtendedResourceName)
	for _, b := range []*types.Bool{&m.WaitForRollout, &m.WaitForResourceSlices, &m.DeleteNamespace} {
		if b.IsNull() || b.IsUnknown() {
			*b = types.BoolValue(b != &m.DeleteNamespace)
		}
	}
	m.setStatus(live.Status)
}

// setStatus fills the computed counts.
func (m *draDriverModel) setStatus(status kube.DRADriverStatus) {
	m.DesiredNodes = types.Int64Value(status.DesiredNodes)
	m.ReadyNodes = types.Int64Value(status.ReadyNodes)
	m.PublishedNodes = types.Int64Value(status.PublishedNodes)
	m.PublishedDevices = types.Int64Value(status.Devices)
}

// boolMapValue is m as a Terraform map of bools; empty is null unless
// prior was an empty map.
func boolMapValue(m map[string]bool, prior types.Map) types.Map {
	if len(m) == 0 {
		if !prior.IsNull() && !prior.IsUnknown() && len(prior.Elements()) == 0 {
			return prior
		}
		return types.MapNull(types.BoolType)
	}
	elems := map[string]attr.Value{}
	for k, v := range m {
		elems[k] = types.BoolValue(v)
	}
	return types.MapValueMust(types.BoolType, elems)
}
