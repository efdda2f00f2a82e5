package provider

import (
	"context"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// devicePluginModel is gpu_device_plugin's state.
type devicePluginModel struct {
	ID                 types.String `tfsdk:"id"`
	OwnerID            types.String `tfsdk:"owner_id"`
	Namespace          types.String `tfsdk:"namespace"`
	DeleteNamespace    types.Bool   `tfsdk:"delete_namespace_if_not_empty"`
	Name               types.String `tfsdk:"name"`
	Image              types.String `tfsdk:"image"`
	ImagePullPolicy    types.String `tfsdk:"image_pull_policy"`
	NodeSelector       types.Map    `tfsdk:"node_selector"`
	Tolerations        types.List   `tfsdk:"tolerations"`
	PriorityClassName  types.String `tfsdk:"priority_class_name"`
	GPUNodeAffinity    types.Bool   `tfsdk:"gpu_node_affinity"`
	Resources          types.Object `tfsdk:"resources"`
	UpdateStrategy     types.String `tfsdk:"update_strategy"`
	MaxUnavailable     types.String `tfsdk:"max_unavailable"`
	WaitForRollout     types.Bool   `tfsdk:"wait_for_rollout"`
	WaitForAllocatable types.Bool   `tfsdk:"wait_for_allocatable"`
	ResourceName       types.String `tfsdk:"resource_name"`
	DesiredNodes       types.Int64  `tfsdk:"desired_nodes"`
	ReadyNodes         types.Int64  `tfsdk:"ready_nodes"`
	AllocatableGPUs    types.Int64  `tfsdk:"allocatable_gpus"`

	Config       *devicePluginConfigModel       `tfsdk:"config"`
	RuntimeClass *devicePluginRuntimeClassModel `tfsdk:"runtime_class"`
	GFD          *devicePluginGFDModel          `tfsdk:"gpu_feature_discovery"`
	DCGM         *devicePluginDCGMModel         `tfsdk:"dcgm_exporter"`
	HealthAgent  *devicePluginHealthAgentModel  `tfsdk:"health_agent"`
	Timeouts     timeouts.Value                 `tfsdk:"timeouts"`
}

type devicePluginRuntimeClassModel struct {
	Create  types.Bool   `tfsdk:"create"`
	Name    types.String `tfsdk:"name"`
	Handler types.String `tfsdk:"handler"`
}

type devicePluginGFDModel struct {
	Enabled   types.Bool   `tfsdk:"enabled"`
	Image     types.String `tfsdk:"image"`
	DeployNFD types.Bool   `tfsdk:"deploy_node_feature_discovery"`
}

type devicePluginDCGMModel struct {
	Enabled        types.Bool   `tfsdk:"enabled"`
	Image          types.String `tfsdk:"image"`
	Port           types.Int64  `tfsdk:"port"`
	ServiceMonitor types.Bool   `tfsdk:"service_monitor"`
}

type devicePluginResourcesModel struct {
	Requests types.Map `tfsdk:"requests"`
	Limits   types.Map `tfsdk:"limits"`
}

var devicePluginResourcesType = map[string]attr.Type{
	"requests": types.MapType{ElemType: types.StringType},
	"limits":   types.MapType{ElemType: types.StringType},
}

// toSpec turns a plan (all values known) into what to deploy.
func (m *devicePluginModel) toSpec(ctx context.Context) (kube.DevicePluginSpec, diag.Diagnostics) {
	var diags diag.Diagnostics
	s := kube.DevicePluginSpec{
		Namespace:         m.Namespace.ValueString(),
		Name:              m.Name.ValueString(),
		Image:             m.Image.ValueString(),
		ImagePullPolicy:   corev1.PullPolicy(m.ImagePullPolicy.ValueString()),
		PriorityClassName: m.PriorityClassName.ValueString(),
		GPUNodeAffinity:   m.GPUNodeAffinity.ValueBool(),
		UpdateStrategy:    m.UpdateStrategy.ValueString(),
	}
	if !m.NodeSelector.IsNull() {
		diags.Append(m.NodeSelector.ElementsAs(ctx, &s.NodeSelector, false)...)
	}
	var tolerations []tolerationModel
	diags.Append(m.Tolerations.ElementsAs(ctx, &tolerations, false)...)
	s.Tolerations = tolerationsToKube(tolerations)
	if !m.Resources.IsNull() {
		var r devicePluginResourcesModel
		var requests, limits map[string]string
		diags.Append(m.Resources.As(ctx, &r, basetypes.ObjectAsOptions{})...)
		diags.Append(r.Requests.ElementsAs(ctx, &requests, false)...)
		diags.Append(r.Limits.ElementsAs(ctx, &limits, false)...)
		s.Resources = corev1.ResourceRequirements{Requests: resourceList(requests), Limits: resourceList(limits)}
	}
	if s.UpdateStrategy != "OnDelete" {
		s.MaxUnavailable = parseMaxUnavailable(m.MaxUnavailable.ValueString())
	}
	if rc := m.RuntimeClass; rc != nil {
		s.RuntimeClass = &kube.RuntimeClassSpec{Create: rc.Create.ValueBool(), Name: rc.Name.ValueString(), Handler: rc.Handler.ValueString()}
	}
	config, d := m.Config.toKube(ctx)
	diags.Append(d...)
	s.Config = config
	if m.GFD != nil && m.GFD.Enabled.ValueBool() {
		s.GFD = &kube.GFDSpec{Image: m.GFD.Image.ValueString(), DeployNFD: m.GFD.DeployNFD.ValueBool()}
	}
	if m.DCGM != nil && m.DCGM.Enabled.ValueBool() {
		s.DCGM = &kube.DCGMSpec{Image: m.DCGM.Image.ValueString(), Port: int32(m.DCGM.Port.ValueInt64()), ServiceMonitor: m.DCGM.ServiceMonitor.ValueBool()}
	}
	s.HealthAgent, d = m.HealthAgent.toKube(ctx)
	diags.Append(d...)
	return s, diags
}

// resourceList parses quantities the schema has validated.
func resourceList(m map[string]string) corev1.ResourceList {
	if len(m) == 0 {
		return nil
	}
	list := corev1.ResourceList{}
	for name, value := range m {
		if q, err := resource.ParseQuantity(value); err == nil {
			list[corev1.ResourceName(name)] = q
		}
	}
	return list
}

func parseMaxUnavailable(v string) *intstr.IntOrString {
	if strings.HasSuffix(v, "%") {
		value := intstr.FromString(v)
		return &value
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil
	}
	value := intstr.FromInt32(int32(n))
	return &value
}

// setFromLive writes what the cluster has into m, keeping m's values where
// the cluster cannot tell them apart (a block present but disabled, a
// ServiceMonitor on a cluster without the CRD, max_unavailable under
// OnDelete, a quantity's spelling). m holds the prior state, or only the ID
// parts on import.
func (m *devicePluginModel) setFromLive(live kube.DevicePluginLive) {
	s := live.Spec
	m.ID = types.StringValue(s.ID())
	m.Namespace, m.Name = types.StringValue(s.Namespace), types.StringValue(s.Name)
	m.Image = types.StringValue(s.Image)
	m.ImagePullPolicy = types.StringValue(string(s.ImagePullPolicy))
	m.NodeSelector = stringMapValue(s.NodeSelector, m.NodeSelector)
	m.Tolerations = tolerationsListValue(s.Tolerations)
	m.PriorityClassName = types.StringValue(s.PriorityClassName)
	m.GPUNodeAffinity = types.BoolValue(s.GPUNodeAffinity)
	m.Resources = resourcesValue(s.Resources, m.Resources)
	m.UpdateStrategy = types.StringValue(s.UpdateStrategy)
	if s.MaxUnavailable != nil {
		m.MaxUnavailable = types.StringValue(s.MaxUnavailable.String())
	} else if m.MaxUnavailable.IsNull() {
		m.MaxUnavailable = types.StringValue("1")
	}
	for _, b := range []*types.Bool{&m.WaitForRollout, &m.WaitForAllocatable} {
		if b.IsNull() || b.IsUnknown() {
			*b = types.BoolValue(true)
		}
	}

	if s.RuntimeClass == nil {
		m.RuntimeClass = nil
	} else {
		handler := types.StringValue(s.RuntimeClass.Handler)
		if s.RuntimeClass.Handler == "" { // the RuntimeClass is gone: keep what was asked for
			handler = types.StringValue(kube.DefaultRuntimeClassName)
			if m.RuntimeClass != nil {
				handler = m.RuntimeClass.Handler
			}
		}
		m.RuntimeClass = &devicePluginRuntimeClassModel{Create: types.BoolValue(s.RuntimeClass.Create), Name: types.StringValue(s.RuntimeClass.Name), Handler: handler}
	}
	m.Config = devicePluginConfigFromKube(s.Config, m.Config)

	switch {
	case s.GFD != nil:
		// GFD runs the plugin's image unless told otherwise: that is no
		// image of its own, unless the configuration named it anyway.
		image := types.StringValue(s.GFD.Image)
		priorNamedIt := m.GFD != nil && !m.GFD.Image.IsNull()
		if s.GFD.Image == "" || (s.GFD.Image == s.Image && !priorNamedIt) {
			image = types.StringNull()
		}
		m.GFD = &devicePluginGFDModel{Enabled: types.BoolValue(true), Image: image, DeployNFD: types.BoolValue(s.GFD.DeployNFD)}
	case m.GFD != nil && !m.GFD.Enabled.ValueBool():
		// disabled in the configuration, and not deployed: as it should be
	default:
		m.GFD = nil
	}
	switch {
	case s.DCGM != nil:
		serviceMonitor := types.BoolValue(s.DCGM.ServiceMonitor)
		if !live.ServiceMonitorKnown {
			serviceMonitor = types.BoolValue(false)
			if m.DCGM != nil && !m.DCGM.ServiceMonitor.IsNull() {
				serviceMonitor = m.DCGM.ServiceMonitor
			}
		}
		m.DCGM = &devicePluginDCGMModel{Enabled: types.BoolValue(true), Image: types.StringValue(s.DCGM.Image),
			Port: types.Int64Value(int64(s.DCGM.Port)), ServiceMonitor: serviceMonitor}
	case m.DCGM != nil && !m.DCGM.Enabled.ValueBool():
	default:
		m.DCGM = nil
	}
	if s.HealthAgent != nil {
		m.HealthAgent = devicePluginHealthAgentFromKube(*s.HealthAgent, s.HealthAgentName(), m.HealthAgent)
	} else {
		m.HealthAgent = nil
	}
	m.setStatus(s.Config, live.Status)
}

// setStatus fills the computed counts.
func (m *devicePluginModel) setStatus(config kube.DevicePluginConfig, status kube.DevicePluginStatus) {
	m.ResourceName = types.StringValue(config.AdvertisedGPUResource())
	m.DesiredNodes = types.Int64Value(status.DesiredNodes)
	m.ReadyNodes = types.Int64Value(status.ReadyNodes)
	m.AllocatableGPUs = types.Int64Value(status.AllocatableGPUs)
	if m.HealthAgent != nil {
		m.HealthAgent.DaemonSet = types.StringValue(m.Name.ValueString() + "-health-agent")
	}
}

// resourcesValue is r as the `resources` attribute. A quantity keeps
// prior's spelling where it is the same amount (keepQuantitySpelling): the
// API server reads "0.5Gi" back as "512Mi", which is no diff.
func resourcesValue(r corev1.ResourceRequirements, prior types.Object) types.Object {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return types.ObjectNull(devicePluginResourcesType)
	}
	var priorAttrs map[string]attr.Value
	if !prior.IsNull() && !prior.IsUnknown() {
		priorAttrs = prior.Attributes()
	}
	list := func(key string, l corev1.ResourceList) types.Map {
		if len(l) == 0 {
			return types.MapNull(types.StringType)
		}
		var priorElems map[string]attr.Value
		if m, ok := priorAttrs[key].(types.Map); ok && !m.IsNull() && !m.IsUnknown() {
			priorElems = m.Elements()
		}
		elems := map[string]attr.Value{}
		for name, q := range l {
			priorValue, _ := priorElems[string(name)].(types.String)
			elems[string(name)] = keepQuantitySpelling(q, priorValue)
		}
		return types.MapValueMust(types.StringType, elems)
	}
	return types.ObjectValueMust(devicePluginResourcesType, map[string]attr.Value{"requests": list("requests", r.Requests), "limits": list("limits", r.Limits)})
}
