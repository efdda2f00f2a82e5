package provider

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

var _ validator.String = extendedResourceNameValidator{}

// draDriverRootRegex: an absolute path, as the chart's nvidiaDriverRoot.
var draDriverRootRegex = regexp.MustCompile(`^/[^\x00]*$`)

// draDriverNameMaxLength keeps the longest derived name,
// "<name>-clusterrole-binding-kubeletplugin", within 63 characters.
const draDriverNameMaxLength = 29

func draDriverSchema(ctx context.Context) schema.Schema {
	timeoutsBlock := resourceTimeoutsBlock(ctx, timeouts.Opts{Create: true, Update: true, Delete: true},
		"How long to wait. `create` and `update` bound `wait_for_rollout` and `wait_for_resource_slices` "+
			"(default 10m); `delete` bounds waiting for the DaemonSet (and a namespace this resource created) to be gone (default 5m). "+
			"Positive durations as Go writes them, e.g. `90s`, `15m`.")
	return schema.Schema{
		MarkdownDescription: "Deploys NVIDIA's [DRA driver for GPUs](https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu) as its Helm chart " +
			nvdra.DriverVersion + " lays out the GPU half of it: the kubelet plugin's DaemonSet (its `gpus` container), its ServiceAccount, " +
			"ClusterRole and Role with their bindings, and the DeviceClasses `gpu.nvidia.com` and `mig.nvidia.com` (`resource.k8s.io/v1`), " +
			"with server-side apply (field manager `terraform-provider-gpu`). Workloads then claim GPUs through Dynamic Resource Allocation " +
			"(ResourceClaims) instead of the device plugin's `nvidia.com/gpu`.\n\n" +
			"**Requirements.** The cluster must serve `resource.k8s.io/v1`: Kubernetes 1.34 or newer, where Dynamic Resource Allocation is on " +
			"by default. On an older cluster, or one that turned it off, the plan warns and the apply stops with an error naming the cluster's " +
			"version, before anything is written. NVIDIA's chart " + nvdra.DriverVersion + " calls GPU allocation not yet supported and deploys " +
			"it only with `gpuResourcesEnabledOverride=true`; this resource deploys that part. The ComputeDomain part of the chart (its " +
			"controller, the ComputeDomain CRD, the `compute-domains` container, used for multi-node NVLink) is not deployed: install it with " +
			"the chart (`resources.gpus.enabled=false`) under another release name.\n\n" +
			"**Device plugin and DRA in one cluster.** A GPU must be handed out by one of them only. Give DRA nodes and device-plugin nodes " +
			"different labels and set `node_selector` here and on `gpu_device_plugin` accordingly (e.g. `gpu-path = \"dra\"` and " +
			"`gpu-path = \"device-plugin\"`); an apply warns when a node running this driver also advertises `nvidia.com/gpu`. " +
			"With `extended_resource_name = \"nvidia.com/gpu\"` (Kubernetes 1.36 or newer, or the `DRAExtendedResource` feature gate on), " +
			"an unchanged pod asking for `nvidia.com/gpu: 1` gets a whole GPU through DRA on a DRA node, and through the device plugin on a " +
			"device-plugin node: the scheduler picks either, as capacity allows. Without it, such a pod never lands on a DRA node.\n\n" +
			"By default `terraform apply` waits until every kubelet plugin pod runs the current template and is available, then until every " +
			"node that runs one has published its devices: the ResourceSlices of driver `gpu.nvidia.com` of the pool named after the node, " +
			"complete. When that does not happen in time the error names each node that has not published and why: its pod's phase, pending " +
			"reason and recent events, or that the plugin runs and published nothing.\n\n" +
			ownershipDescription,
		Attributes: draDriverAttributes(),
		Blocks:     map[string]schema.Block{"timeouts": timeoutsBlock},
	}
}

// draFeatureGateNames are the gates feature_gates accepts, in name order.
var draFeatureGateNames = slices.Sorted(maps.Keys(kube.DRADriverFeatureGates))

// draFeatureGatesDescription lists every gate with its maturity and default.
func draFeatureGatesDescription() string {
	var parts []string
	for _, name := range draFeatureGateNames {
		g := kube.DRADriverFeatureGates[name]
		parts = append(parts, fmt.Sprintf("`%s` (%s, default `%t`)", name, g.Stage, g.Default))
	}
	return strings.Join(parts, ", ")
}

func draDriverAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"id": schema.StringAttribute{
			Computed:            true,
			MarkdownDescription: "`namespace/name`: the namespace and the release name the objects are named after.",
			PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
		"owner_id": ownerIDAttribute(),
		"namespace": schema.StringAttribute{
			Optional: true,
			Computed: true,
			Default:  stringdefault.StaticString(kube.DefaultDRADriverNamespace),
			MarkdownDescription: "Namespace of the DaemonSet, ServiceAccount and Role. Created when it does not exist, and then deleted with this " +
				"resource when nothing else is in it (see `delete_namespace_if_not_empty`); a namespace that existed before is kept. Defaults to `" +
				kube.DefaultDRADriverNamespace + "`. Changing it replaces the deployment.",
			Validators:    []validator.String{dns1123LabelValidator{}},
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"delete_namespace_if_not_empty": deleteNamespaceIfNotEmptyAttribute(),
		"name": schema.StringAttribute{
			Optional: true,
			Computed: true,
			Default:  stringdefault.StaticString(kube.DefaultDRADriverName),
			MarkdownDescription: "The release name the chart derives object names from: DaemonSet `<name>-kubelet-plugin`, ServiceAccount " +
				"`<name>-service-account-kubeletplugin`, ClusterRole `<name>-clusterrole-kubeletplugin` and so on. A DNS-1123 label of at most " +
				"29 characters starting with a letter. Defaults to `" + kube.DefaultDRADriverName + "`. Changing it replaces the deployment.",
			Validators: []validator.String{
				dns1123LabelValidator{},
				stringvalidator.LengthAtMost(draDriverNameMaxLength),
				stringvalidator.RegexMatches(nameStartsWithLetterRegex, "must start with a letter"),
			},
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"image": schema.StringAttribute{
			Optional:            true,
			Computed:            true,
			Default:             stringdefault.StaticString(kube.DefaultDRADriverImage),
			MarkdownDescription: "Driver image, of the init container and the `gpus` container. Defaults to `" + kube.DefaultDRADriverImage + "`, the release modeled.",
			Validators:          []validator.String{imageReferenceValidator{}},
		},
		"image_pull_policy": imagePullPolicyAttribute("the `gpus` container"),
		"node_selector": schema.MapAttribute{
			Optional:    true,
			ElementType: types.StringType,
			MarkdownDescription: "Node labels the kubelet plugin's pods require, on top of `gpu_node_affinity`, e.g. `{ \"gpu-path\" = \"dra\" }`. " +
				"This is how DRA nodes are told from device-plugin nodes: give `gpu_device_plugin` a `node_selector` the DRA nodes do not match.",
			Validators: []validator.Map{labelsValidator{}},
		},
		"gpu_node_affinity": schema.BoolAttribute{
			Optional: true,
			Computed: true,
			Default:  booldefault.StaticBool(true),
			MarkdownDescription: "Restrict the pods to the chart's GPU nodes: labeled `feature.node.kubernetes.io/pci-10de.present=true` or " +
				"`feature.node.kubernetes.io/cpu-model.vendor_id=NVIDIA` (Node Feature Discovery's) or `nvidia.com/gpu.present=true`. Defaults to `true`.",
		},
		"tolerations":         gpuNodeTolerationsAttribute(),
		"priority_class_name": priorityClassNameAttribute(kube.DefaultDRADriverPriority, ", as the chart sets it"),
		"driver_root": schema.StringAttribute{
			Optional: true,
			Computed: true,
			Default:  stringdefault.StaticString(kube.DefaultDRADriverRoot),
			MarkdownDescription: "Where the NVIDIA driver is on the host (the chart's `nvidiaDriverRoot`): `/` for a driver installed on the " +
				"host, `/run/nvidia/driver` for the GPU Operator's driver container. Defaults to `/`.",
			Validators: []validator.String{stringvalidator.RegexMatches(draDriverRootRegex, "must be an absolute path, such as / or /run/nvidia/driver")},
		},
		"log_verbosity": schema.Int64Attribute{
			CustomType:          wholeNumberType{},
			Optional:            true,
			Computed:            true,
			Default:             int64default.StaticInt64(kube.DefaultDRADriverLogVerbosity),
			MarkdownDescription: "The plugin's klog verbosity (the chart's `logVerbosity`), 0 or more. Defaults to `4`.",
			Validators:          []validator.Int64{int64validator.Between(0, 10)},
		},
		"feature_gates": schema.MapAttribute{
			Optional:    true,
			ElementType: types.BoolType,
			MarkdownDescription: "The driver's feature gates (the chart's `featureGates`), name to on/off; gates left out keep their default. " +
				"Known to " + nvdra.DriverVersion + ": " + draFeatureGatesDescription() + ". `TimeSlicingSettings` lets claims set " +
				"time-slicing intervals and `MPSSupport` lets them share a GPU through MPS (the plugin then manages Deployments in its " +
				"namespace, and its Role says so). Turning an alpha gate on is warned about at plan.",
		},
		"device_classes": schema.SetAttribute{
			Optional:    true,
			Computed:    true,
			ElementType: types.StringType,
			Default:     setdefault.StaticValue(stringSetValue(kube.DRADeviceClasses)),
			MarkdownDescription: "The chart's DeviceClasses to create: `gpu.nvidia.com` (whole GPUs) and `mig.nvidia.com` (MIG devices). " +
				"They are cluster-wide with fixed names, so one cluster has one of this resource. Defaults to both. Valid values are: " +
				backtickList(kube.DRADeviceClasses) + ".",
			Validators: []validator.Set{setvalidator.ValueStringsAre(stringvalidator.OneOf(kube.DRADeviceClasses...))},
		},
		"extended_resource_name": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "An extended resource that DeviceClass `gpu.nvidia.com` answers for (its `extendedResourceName`), e.g. " +
				"`nvidia.com/gpu`: a pod asking for it gets whole GPUs through DRA on nodes where no device plugin advertises it. The chart " +
				nvdra.DriverVersion + " sets none (later releases set `nvidia.com/gpu`). Needs the `DRAExtendedResource` feature gate of " +
				"kube-apiserver and kube-scheduler: on by default from Kubernetes 1.36, alpha and off in 1.34 and 1.35; an API server with it " +
				"off drops the field, and the apply stops with an error saying so. Needs `gpu.nvidia.com` in `device_classes`.",
			Validators: []validator.String{extendedResourceNameValidator{}},
		},
		"wait_for_rollout": schema.BoolAttribute{
			Optional:            true,
			Computed:            true,
			Default:             booldefault.StaticBool(true),
			MarkdownDescription: "Wait, within `timeouts`, until the kubelet plugin's pods run the current template and are available. Defaults to `true`.",
		},
		"wait_for_resource_slices": schema.BoolAttribute{
			Optional: true,
			Computed: true,
			Default:  booldefault.StaticBool(true),
			MarkdownDescription: "Wait, within `timeouts`, until every node that runs a kubelet plugin pod has published its devices " +
				"(a complete pool of ResourceSlices of driver `gpu.nvidia.com`). Defaults to `true`.",
		},
		"desired_nodes": schema.Int64Attribute{
			Computed:            true,
			MarkdownDescription: "Nodes the kubelet plugin's DaemonSet wants a pod on, when last read.",
		},
		"ready_nodes": schema.Int64Attribute{
			Computed:            true,
			MarkdownDescription: "Nodes whose kubelet plugin pod is ready, when last read.",
		},
		"published_nodes": schema.Int64Attribute{
			Computed:            true,
			MarkdownDescription: "Nodes running a kubelet plugin pod whose pool of ResourceSlices is complete, when last read.",
		},
		"published_devices": schema.Int64Attribute{
			Computed:            true,
			MarkdownDescription: "Devices (GPUs, and MIG devices where the driver publishes them) in those pools, when last read.",
		},
	}
}

// extendedResourceNameValidator accepts what Kubernetes accepts as an
// extended resource name: a qualified name with a domain prefix outside
// kubernetes.io, whose quota name requests.<name> is one too.
type extendedResourceNameValidator struct{}

func (extendedResourceNameValidator) Description(context.Context) string {
	return "value must be an extended resource name with a domain prefix, such as nvidia.com/gpu"
}

func (v extendedResourceNameValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (extendedResourceNameValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	name := req.ConfigValue.ValueString()
	prefix, _, hasPrefix := strings.Cut(name, "/")
	problems := validation.IsQualifiedName(name)
	switch {
	case !hasPrefix:
		problems = append(problems, "it has no domain prefix")
	case prefix == "kubernetes.io" || strings.HasSuffix(prefix, ".kubernetes.io"):
		problems = append(problems, "the kubernetes.io domain is Kubernetes' own")
	}
	problems = append(problems, validation.IsQualifiedName("requests."+name)...)
	if len(problems) > 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid extended resource name",
			fmt.Sprintf("%s %q is not an extended resource name: %s. Write a name with a domain prefix, such as \"nvidia.com/gpu\".",
				req.Path, name, strings.Join(problems, "; ")))
	}
}
