package provider

import (
	"context"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// The values the schema offers, each listed once for its validator and its description.
var (
	devicePluginPullPolicies     = []string{"IfNotPresent", "Always", "Never"}
	devicePluginUpdateStrategies = []string{"RollingUpdate", "OnDelete"}
	devicePluginResourceKeys     = []string{"cpu", "memory", "ephemeral-storage"}
	maxUnavailableRegex          = regexp.MustCompile(`^([1-9][0-9]*|([1-9][0-9]?|100)%)$`)
	nameStartsWithLetterRegex    = regexp.MustCompile(`^[a-z]`)
)

// devicePluginNameMaxLength leaves room for the longest derived name,
// "<name>-mps-control-daemon", within a 63-character label value.
const devicePluginNameMaxLength = 40

func devicePluginSchema(ctx context.Context) schema.Schema {
	timeoutsBlock := resourceTimeoutsBlock(ctx, timeouts.Opts{Create: true, Update: true, Delete: true},
		"How long to wait. `create` and `update` bound `wait_for_rollout` and `wait_for_allocatable` "+
			"(default 10m); `delete` bounds waiting for the DaemonSets (and a namespace this resource created) to be gone (default 5m). "+
			"Positive durations as Go writes them, e.g. `90s`, `15m`.")
	return schema.Schema{
		MarkdownDescription: "Deploys NVIDIA's [device plugin](https://github.com/NVIDIA/k8s-device-plugin) as a DaemonSet, its config file in a " +
			"ConfigMap, and optionally a RuntimeClass, GPU Feature Discovery and the DCGM exporter, with server-side apply " +
			"(field manager `terraform-provider-gpu`). A change to `config` rolls the plugin's pods (a hash of the file is in their template).\n\n" +
			"By default `terraform apply` waits until every plugin pod runs the current template and is available, then until every node " +
			"that runs one advertises allocatable GPUs (`nvidia.com/gpu`, or `nvidia.com/gpu.shared` under sharing with `rename_by_default`). " +
			"When that does not happen in time the error names each node that is not ready and why: its pod's phase and waiting reason, " +
			"recent events, or that the plugin runs and the node still advertises nothing.\n\n" +
			ownershipDescription,
		Attributes: devicePluginAttributes(),
		Blocks: map[string]schema.Block{
			"config":                devicePluginConfigBlock(),
			"runtime_class":         devicePluginRuntimeClassBlock(),
			"gpu_feature_discovery": devicePluginGFDBlock(),
			"dcgm_exporter":         devicePluginDCGMBlock(),
			"health_agent":          devicePluginHealthAgentBlock(),
			"timeouts":              timeoutsBlock,
		},
	}
}

func devicePluginAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"id": schema.StringAttribute{
			Computed:            true,
			MarkdownDescription: "`namespace/name` of the plugin's DaemonSet.",
			PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
		"owner_id": ownerIDAttribute(),
		"namespace": schema.StringAttribute{
			Optional: true,
			Computed: true,
			Default:  stringdefault.StaticString(kube.DefaultDevicePluginNSName),
			MarkdownDescription: "Namespace of every object. Created when it does not exist, and then deleted with this resource when nothing " +
				"else is in it (see `delete_namespace_if_not_empty`); a namespace that existed before is kept. Defaults to `" +
				kube.DefaultDevicePluginNSName + "`. Changing it replaces the deployment.",
			Validators:    []validator.String{dns1123LabelValidator{}},
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"delete_namespace_if_not_empty": deleteNamespaceIfNotEmptyAttribute(),
		"name": schema.StringAttribute{
			Optional: true,
			Computed: true,
			Default:  stringdefault.StaticString(kube.DefaultDevicePluginName),
			MarkdownDescription: "Name of the plugin's DaemonSet; the other objects add a suffix (`-config`, `-gfd`, `-dcgm-exporter`, " +
				"`-mps-control-daemon`). A DNS-1123 label of at most 40 characters starting with a letter. Defaults to `" +
				kube.DefaultDevicePluginName + "`. Changing it replaces the deployment.",
			Validators: []validator.String{
				dns1123LabelValidator{},
				stringvalidator.LengthAtMost(devicePluginNameMaxLength),
				stringvalidator.RegexMatches(nameStartsWithLetterRegex, "must start with a letter (it also names a Service)"),
			},
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
		"image": schema.StringAttribute{
			Optional:            true,
			Computed:            true,
			Default:             stringdefault.StaticString(kube.DefaultDevicePluginImage),
			MarkdownDescription: "Device plugin image. Defaults to `" + kube.DefaultDevicePluginImage + "`, NVIDIA's current release.",
			Validators:          []validator.String{imageReferenceValidator{}},
		},
		"image_pull_policy": imagePullPolicyAttribute("every container"),
		"node_selector": schema.MapAttribute{
			Optional:    true,
			ElementType: types.StringType,
			MarkdownDescription: "Node labels the pods require, on top of the GPU node affinity, e.g. " +
				"`{ \"node.kubernetes.io/instance-type\" = \"p5.48xlarge\" }`.",
			Validators: []validator.Map{labelsValidator{}},
		},
		"tolerations":         gpuNodeTolerationsAttribute(),
		"priority_class_name": priorityClassNameAttribute(kube.DefaultDevicePluginPrio, ", so that they are not evicted before the workloads that need them"),
		"gpu_node_affinity": schema.BoolAttribute{
			Optional: true,
			Computed: true,
			Default:  booldefault.StaticBool(true),
			MarkdownDescription: "Restrict the pods to nodes labeled `nvidia.com/gpu.present=true` or " +
				"`feature.node.kubernetes.io/pci-10de.present=true` (Node Feature Discovery's label for an NVIDIA PCI device). Defaults to `true`.",
		},
		"resources": schema.SingleNestedAttribute{
			Optional:            true,
			MarkdownDescription: "Compute resources of the plugin container; none when unset (the plugin needs little).",
			Attributes: map[string]schema.Attribute{
				"requests": devicePluginResourceList("What the scheduler reserves, e.g. `{ cpu = \"50m\", memory = \"64Mi\" }`."),
				"limits":   devicePluginResourceList("The most the container may use, e.g. `{ memory = \"256Mi\" }`."),
			},
		},
		"update_strategy": schema.StringAttribute{
			Optional:            true,
			Computed:            true,
			Default:             stringdefault.StaticString("RollingUpdate"),
			MarkdownDescription: "How the DaemonSets replace pods. Valid values are: " + backtickList(devicePluginUpdateStrategies) + ". Defaults to `RollingUpdate`.",
			Validators:          []validator.String{stringvalidator.OneOf(devicePluginUpdateStrategies...)},
		},
		"max_unavailable": schema.StringAttribute{
			Optional: true,
			Computed: true,
			Default:  stringdefault.StaticString("1"),
			MarkdownDescription: "With `RollingUpdate`, how many nodes may be without a plugin pod during a rollout: a count (`\"1\"`) or " +
				"a percentage of the nodes (`\"25%\"`). Defaults to `\"1\"`.",
			Validators: []validator.String{stringvalidator.RegexMatches(maxUnavailableRegex, "must be a positive count such as \"2\", or a percentage from 1% to 100%")},
		},
		"wait_for_rollout": schema.BoolAttribute{
			Optional: true,
			Computed: true,
			Default:  booldefault.StaticBool(true),
			MarkdownDescription: "Wait, within `timeouts`, until every DaemonSet's pods run the current template and are available. " +
				"Defaults to `true`.",
		},
		"wait_for_allocatable": schema.BoolAttribute{
			Optional: true,
			Computed: true,
			Default:  booldefault.StaticBool(true),
			MarkdownDescription: "Wait, within `timeouts`, until every node that runs a plugin pod advertises allocatable GPUs " +
				"(`resource_name` > 0) and, with `gpu_feature_discovery`, every node GFD runs on carries its labels (`nvidia.com/gpu.count`, ...): " +
				"a failed wait names the nodes and says whether Node Feature Discovery runs; with `health_agent`, until every node the agent runs on " +
				"reports the `AcceleratedHardwareReady` condition. Defaults to `true`.",
		},
		"resource_name": schema.StringAttribute{
			Computed: true,
			MarkdownDescription: "The extended resource the plugin advertises full GPUs as: `nvidia.com/gpu`, or `nvidia.com/gpu.shared` " +
				"when `config` shares them with `rename_by_default`. Workloads request it.",
		},
		"desired_nodes": schema.Int64Attribute{
			Computed:            true,
			MarkdownDescription: "Nodes the plugin's DaemonSet wants a pod on, when last read.",
		},
		"ready_nodes": schema.Int64Attribute{
			Computed:            true,
			MarkdownDescription: "Nodes whose plugin pod is ready, when last read.",
		},
		"allocatable_gpus": schema.Int64Attribute{
			Computed: true,
			MarkdownDescription: "Allocatable devices of `resource_name` (and, with the `mixed` MIG strategy, of every `nvidia.com/mig-*` resource) " +
				"summed over the nodes that run a plugin pod, when last read. Under time-slicing each GPU counts `replicas` times.",
		},
	}
}

func devicePluginResourceList(description string) schema.MapAttribute {
	return schema.MapAttribute{
		Optional:            true,
		ElementType:         types.StringType,
		MarkdownDescription: description + " Keys: " + backtickList(devicePluginResourceKeys) + "; values are Kubernetes quantities.",
		Validators: []validator.Map{
			mapvalidator.KeysAre(stringvalidator.OneOf(devicePluginResourceKeys...)),
			mapvalidator.ValueStringsAre(quantityValidator{}),
		},
	}
}

func defaultDevicePluginTolerations() types.List {
	toleration := func(key, effect string) attr.Value {
		e := types.StringNull()
		if effect != "" {
			e = types.StringValue(effect)
		}
		return types.ObjectValueMust(tolerationObjectType.AttrTypes, map[string]attr.Value{
			"key": types.StringValue(key), "operator": types.StringValue("Exists"), "value": types.StringNull(),
			"effect": e, "toleration_seconds": types.Int64Null(),
		})
	}
	return types.ListValueMust(tolerationObjectType, []attr.Value{
		toleration("nvidia.com/gpu", "NoSchedule"),
		toleration("CriticalAddonsOnly", ""),
	})
}

func devicePluginRuntimeClassBlock() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Run the pods with a RuntimeClass, as needed where containerd's default runtime is not NVIDIA's " +
			"(the GPU Operator's layout). With `create` the RuntimeClass is made, and deleted with this resource; workloads can use it " +
			"too (`gpu_workload.runtime_class_name`).",
		Attributes: map[string]schema.Attribute{
			"create": schema.BoolAttribute{
				Optional:            true,
				Computed:            true,
				Default:             booldefault.StaticBool(true),
				MarkdownDescription: "Create the RuntimeClass (else it must exist). Defaults to `true`.",
			},
			"name": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(kube.DefaultRuntimeClassName),
				MarkdownDescription: "Name of the RuntimeClass. Defaults to `nvidia`.",
				Validators:          []validator.String{dns1123SubdomainValidator{}},
			},
			"handler": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(kube.DefaultRuntimeClassName),
				MarkdownDescription: "The container runtime handler it selects, as configured in containerd (`nvidia-ctk runtime configure` names it `nvidia`). Defaults to `nvidia`.",
				Validators:          []validator.String{dns1123LabelValidator{}},
			},
		},
	}
}

func devicePluginGFDBlock() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Deploy GPU Feature Discovery, which labels nodes with their GPUs' product, memory, count and sharing " +
			"(`nvidia.com/gpu.product`, ...), the labels `gpu_workload`'s `products`, `min_memory_gib` and `min_compute_capability` select on. " +
			"GFD writes them into Node Feature Discovery's `features.d` directory on each node; NFD's worker and master turn them into node labels. " +
			"As NVIDIA's Helm chart does with `gfd.enabled`, NFD is deployed with it unless `deploy_node_feature_discovery = false`.",
		Attributes: map[string]schema.Attribute{
			"enabled": schema.BoolAttribute{
				Optional:            true,
				Computed:            true,
				Default:             booldefault.StaticBool(true),
				MarkdownDescription: "Deploy it. Defaults to `true` when the block is present.",
			},
			"image": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Image; the plugin's `image` when unset (the k8s-device-plugin image ships GFD).",
				Validators:          []validator.String{imageReferenceValidator{}},
			},
			"deploy_node_feature_discovery": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(true),
				MarkdownDescription: "Deploy Node Feature Discovery (`" + kube.DefaultNFDImage + "`, the version NVIDIA's chart v0.20.0 pins) beside GFD: " +
					"its CRDs (`NodeFeature`, `NodeFeatureGroup`, `NodeFeatureRule`), a worker DaemonSet on the plugin's nodes (which also labels " +
					"`feature.node.kubernetes.io/pci-10de.present=true`, the label `gpu_node_affinity` selects fresh GPU nodes by), and a master Deployment " +
					"allowed to write `nvidia.com` labels, with their ServiceAccounts and RBAC. Set `false` only where the cluster already runs NFD " +
					"(e.g. the GPU Operator's) with a worker that reads `/etc/kubernetes/node-feature-discovery/features.d` and a master that allows " +
					"`nvidia.com` labels (`-extra-label-ns=nvidia.com`): without NFD, GFD's labels never reach a node and a workload that selects " +
					"by `products` never schedules. Only one NFD may run in a cluster. Defaults to `true`.",
			},
		},
	}
}

func devicePluginDCGMBlock() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Deploy NVIDIA's DCGM exporter (GPU utilization, memory, temperature, power, XID errors for Prometheus) " +
			"and a Service in front of it.",
		Attributes: map[string]schema.Attribute{
			"enabled": schema.BoolAttribute{
				Optional:            true,
				Computed:            true,
				Default:             booldefault.StaticBool(true),
				MarkdownDescription: "Deploy it. Defaults to `true` when the block is present.",
			},
			"image": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(kube.DefaultDCGMExporterImage),
				MarkdownDescription: "Image. Defaults to `" + kube.DefaultDCGMExporterImage + "`.",
				Validators:          []validator.String{imageReferenceValidator{}},
			},
			"port": schema.Int64Attribute{
				CustomType:          wholeNumberType{},
				Optional:            true,
				Computed:            true,
				Default:             int64default.StaticInt64(kube.DefaultDCGMExporterPort),
				MarkdownDescription: "Port of the metrics endpoint, on the pods and the Service. Defaults to `9400`.",
				Validators:          []validator.Int64{int64validator.Between(1, 65535)},
			},
			"service_monitor": schema.BoolAttribute{
				Optional:            true,
				Computed:            true,
				Default:             booldefault.StaticBool(false),
				MarkdownDescription: "Also create a Prometheus Operator ServiceMonitor for the Service. Only when the cluster has the CRD: otherwise the apply warns and creates none. Defaults to `false`.",
			},
		},
	}
}

// listDefaultStrings is a list default of strings.
func listDefaultStrings(values ...string) types.List {
	elems := make([]attr.Value, len(values))
	for i, v := range values {
		elems[i] = types.StringValue(v)
	}
	return types.ListValueMust(types.StringType, elems)
}
