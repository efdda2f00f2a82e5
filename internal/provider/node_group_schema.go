package provider

import (
	"context"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

// The values the schema offers, each listed once for its validator and its description.
var (
	// nodeGroupAMITypes are the EKS AMI types with an NVIDIA driver, and
	// CUSTOM (a launch template's AMI).
	nodeGroupAMITypes      = eks.NVIDIAAMITypes
	nodeGroupCapacityTypes = []string{"ON_DEMAND", "SPOT", "CAPACITY_BLOCK"}
	nodeGroupTaintEffects  = []string{"NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"}
	nodeGroupWaitFor       = []string{nodeGroupWaitActive, nodeGroupWaitReady, nodeGroupWaitGPUsAllocatable}

	// nodeGroupNamePattern is what EKS accepts as a node group name:
	// letters, digits, '-' and '_', starting with a letter or digit.
	nodeGroupNamePattern    = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9\-_]*$`)
	clusterNamePattern      = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9\-_]*$`)
	iamRoleARNPattern       = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$`)
	subnetIDPattern         = regexp.MustCompile(`^subnet-[0-9a-f]+$`)
	launchTemplateIDPattern = regexp.MustCompile(`^lt-[0-9a-f]+$`)
)

const (
	// wait_for's values; the last two are kube.NodeGroupReady and
	// kube.NodeGroupGPUsAllocatable.
	nodeGroupWaitActive          = "active"
	nodeGroupWaitReady           = "ready"
	nodeGroupWaitGPUsAllocatable = "gpus_allocatable"

	// nodeGroupNameMaxLength is EKS's limit; a prefix leaves room for
	// the unique suffix.
	nodeGroupNameMaxLength       = 63
	nodeGroupNamePrefixMaxLength = nodeGroupNameMaxLength - uniqueSuffixLength
)

func nodeGroupSchema(ctx context.Context) schema.Schema {
	return schema.Schema{
		MarkdownDescription: "An EKS managed node group of NVIDIA GPU instances that is ready when Terraform says so. It takes " +
			"`aws_eks_node_group`'s arguments where they overlap, checks at plan time what EKS would only reject later (or never): every " +
			"instance type has NVIDIA GPUs, all share one architecture, the AMI type fits it, the types are offered in the subnets' " +
			"Availability Zones. It adds the GPU defaults users write by hand (label `nvidia.com/gpu.present=true`, taint " +
			"`nvidia.com/gpu=true:NoSchedule`), tags every Auto Scaling group of the group with cluster-autoscaler's " +
			"`k8s.io/cluster-autoscaler/node-template/...` tags so scale-from-zero works, and waits past ACTIVE until the nodes are " +
			"Ready or advertise their GPUs (`wait_for`), reaching the cluster with an EKS token minted in Go (no `aws` CLI).\n\n" +
			"Defaults are shown in `effective_labels` and `effective_taints`; `labels` and `taints` hold what you wrote, so a plan never " +
			"shows a change you did not make. With cluster-autoscaler, add `lifecycle { ignore_changes = [scaling[0].desired_size] }`.",
		Attributes: nodeGroupAttributes(),
		Blocks: map[string]schema.Block{
			"scaling": schema.ListNestedBlock{
				MarkdownDescription: "Size of the group (one block, required). Changes in place; the Auto Scaling tags follow. " +
					"With cluster-autoscaler managing `desired_size`, ignore it: `lifecycle { ignore_changes = [scaling[0].desired_size] }`.",
				Validators: []validator.List{listvalidator.IsRequired(), listvalidator.SizeBetween(1, 1)},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"min_size": schema.Int64Attribute{
						CustomType: wholeNumberType{},
						Required:   true, MarkdownDescription: "Least number of nodes; 0 allowed.",
						Validators: []validator.Int64{int64validator.AtLeast(0)},
					},
					"max_size": schema.Int64Attribute{
						CustomType: wholeNumberType{},
						Required:   true, MarkdownDescription: "Most number of nodes; at least 1.",
						Validators: []validator.Int64{int64validator.AtLeast(1)},
					},
					"desired_size": schema.Int64Attribute{
						CustomType: wholeNumberType{},
						Required:   true, MarkdownDescription: "Nodes wanted, between `min_size` and `max_size`; 0 allowed (the group scales from zero).",
						Validators: []validator.Int64{int64validator.AtLeast(0)},
					},
				}},
			},
			"update_config": schema.ListNestedBlock{
				MarkdownDescription: "How many nodes a version or launch template update takes down at once: exactly one of " +
					"`max_unavailable` and `max_unavailable_percentage`. Unset, EKS's default (1 node). Changes in place.",
				Validators: []validator.List{listvalidator.SizeAtMost(1)},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"max_unavailable": schema.Int64Attribute{
						CustomType: wholeNumberType{},
						Optional:   true, MarkdownDescription: "Nodes unavailable at once, 1 to 100.",
						Validators: []validator.Int64{int64validator.Between(1, 100)},
					},
					"max_unavailable_percentage": schema.Int64Attribute{
						CustomType: wholeNumberType{},
						Optional:   true, MarkdownDescription: "Percentage of nodes unavailable at once, 1 to 100.",
						Validators: []validator.Int64{int64validator.Between(1, 100)},
					},
					"update_strategy": nodeGroupUpdateStrategyAttribute(),
				}},
			},
			"node_repair_config": nodeGroupNodeRepairBlock(),
			"launch_template": schema.ListNestedBlock{
				MarkdownDescription: "EC2 launch template of the nodes: exactly one of `id` and `name`, and `version`. Required with " +
					"`ami_type = \"CUSTOM\"`. A launch template sets the disk itself: `disk_size` conflicts with it. Changing `id` or `name` " +
					"replaces the group; `version` updates it in place (a rolling update, bounded by `update_config`).",
				Validators: []validator.List{listvalidator.SizeAtMost(1)},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"id": schema.StringAttribute{
						Optional: true, Computed: true, MarkdownDescription: "Launch template ID, e.g. `lt-0123456789abcdef0`.",
						Validators: []validator.String{
							stringvalidator.RegexMatches(launchTemplateIDPattern, "must be a launch template ID, e.g. lt-0123456789abcdef0"),
						},
						PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplaceIfConfigured()},
					},
					"name": schema.StringAttribute{
						Optional: true, Computed: true, MarkdownDescription: "Launch template name.",
						Validators:    []validator.String{stringvalidator.LengthBetween(3, 128)},
						PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplaceIfConfigured()},
					},
					"version": schema.StringAttribute{
						Required: true, MarkdownDescription: "Launch template version: a number, `$Latest` or `$Default`.",
						Validators: []validator.String{stringvalidator.LengthBetween(1, 255)},
					},
				}},
			},
			"capacity_reservation": nodeGroupCapacityBlock(), // node_group_capacity_schema.go
			"timeouts": resourceTimeoutsBlock(ctx, timeouts.Opts{Create: true, Update: true, Delete: true},
				"How long to wait. `create` bounds CREATING → ACTIVE and `wait_for` (default 60m); `update` bounds each EKS update and "+
					"`wait_for` (default 60m); `delete` bounds DELETING → gone (default 60m). Positive durations as Go writes them, e.g. `90s`, `45m`."),
		},
	}
}

func nodeGroupAttributes() map[string]schema.Attribute {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	return map[string]schema.Attribute{
		"id": schema.StringAttribute{
			Computed:            true,
			MarkdownDescription: "`cluster_name:node_group_name`, the import ID.",
			PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
		"cluster_name": schema.StringAttribute{
			Required:            true,
			MarkdownDescription: "Name of the EKS cluster. Changing it replaces the group.",
			Validators: []validator.String{stringvalidator.LengthBetween(1, 100),
				stringvalidator.RegexMatches(clusterNamePattern, "must be an EKS cluster name: letters, digits, '-' and '_', starting with a letter or digit")},
			PlanModifiers: replace,
		},
		"node_group_name": schema.StringAttribute{
			Optional: true,
			Computed: true,
			MarkdownDescription: "Name of the node group. Unset, it is `node_group_name_prefix` (or `terraform-`) and a unique suffix. " +
				"Conflicts with `node_group_name_prefix`. Changing it replaces the group.",
			Validators: []validator.String{
				stringvalidator.LengthBetween(1, nodeGroupNameMaxLength),
				stringvalidator.RegexMatches(nodeGroupNamePattern, "must be an EKS node group name: letters, digits, '-' and '_', starting with a letter or digit"),
				stringvalidator.ConflictsWith(path.MatchRoot("node_group_name_prefix")),
			},
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplaceIfConfigured()},
		},
		"node_group_name_prefix": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Makes a unique `node_group_name` beginning with this prefix (at most 37 characters). Changing it replaces the group.",
			Validators: []validator.String{
				stringvalidator.LengthBetween(1, nodeGroupNamePrefixMaxLength),
				stringvalidator.RegexMatches(nodeGroupNamePattern, "must start a node group name: letters, digits, '-' and '_', starting with a letter or digit"),
			},
			PlanModifiers: replace,
		},
		"node_role_arn": schema.StringAttribute{
			Required:            true,
			MarkdownDescription: "ARN of the IAM role of the nodes, e.g. `arn:aws:iam::111122223333:role/eks-gpu-nodes`. Changing it replaces the group.",
			Validators:          []validator.String{stringvalidator.RegexMatches(iamRoleARNPattern, "must be an IAM role ARN, e.g. arn:aws:iam::111122223333:role/eks-gpu-nodes")},
			PlanModifiers:       replace,
		},
		"subnet_ids": schema.SetAttribute{
			Required:            true,
			ElementType:         types.StringType,
			MarkdownDescription: "Subnets of the nodes. The instance types must be offered in their Availability Zones (checked at plan when known). Changing them replaces the group.",
			Validators: []validator.Set{setvalidator.SizeAtLeast(1),
				setvalidator.ValueStringsAre(stringvalidator.RegexMatches(subnetIDPattern, "must be a subnet ID, e.g. subnet-0123456789abcdef0"))},
			PlanModifiers: []planmodifier.Set{setplanmodifier.RequiresReplace()},
		},
		"instance_types": schema.ListAttribute{
			Required:    true,
			ElementType: types.StringType,
			MarkdownDescription: "EC2 instance types of the nodes, each with NVIDIA GPUs and all of one architecture (checked at plan against EC2 " +
				"DescribeInstanceTypes), e.g. `[\"p5.48xlarge\"]` or, for Spot, several of one GPU count. Changing them replaces the group.",
			Validators:    []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(), listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
			PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplace()},
		},
		"ami_type": schema.StringAttribute{
			Optional: true,
			Computed: true,
			MarkdownDescription: "EKS AMI type. Defaults from the instance types' architecture: `" + eks.DefaultAMIType("x86_64") + "` (x86_64) or `" +
				eks.DefaultAMIType("arm64") + "` (arm64). Valid values are: " + backtickList(nodeGroupAMITypes) + "; `CUSTOM` needs `launch_template`. " +
				"AL2023 and AL2 nodes advertise GPUs once the NVIDIA device plugin runs on them (`gpu_device_plugin`); Bottlerocket NVIDIA " +
				"AMIs run it themselves. Changing it replaces the group.",
			Validators:    []validator.String{stringvalidator.OneOf(nodeGroupAMITypes...)},
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}, // replacement: ModifyPlan
		},
		"capacity_type": schema.StringAttribute{
			Optional:            true,
			Computed:            true,
			Default:             stringdefault.StaticString("ON_DEMAND"),
			MarkdownDescription: "Valid values are: " + backtickList(nodeGroupCapacityTypes) + ". Defaults to `ON_DEMAND`. Changing it replaces the group.",
			Validators:          []validator.String{stringvalidator.OneOf(nodeGroupCapacityTypes...)},
			PlanModifiers:       replace,
		},
		"disk_size": schema.Int64Attribute{
			CustomType:          wholeNumberType{},
			Optional:            true,
			Computed:            true,
			MarkdownDescription: "Root volume size of each node, in GiB. Unset, EKS's default. Conflicts with `launch_template`. Changing it replaces the group.",
			Validators:          []validator.Int64{int64validator.Between(1, 16384)},
			PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown(), int64planmodifier.RequiresReplaceIfConfigured()},
		},
		"labels": schema.MapAttribute{
			Optional:    true,
			ElementType: types.StringType,
			MarkdownDescription: "Kubernetes labels of the nodes, as you write them. `nvidia.com/gpu.present = \"true\"` is added (see " +
				"`effective_labels`); a key you set wins. Changes in place; the Auto Scaling tags follow.",
			Validators: []validator.Map{labelsValidator{}},
		},
		"taints": schema.SetNestedAttribute{
			Optional: true,
			MarkdownDescription: "Kubernetes taints of the nodes, as you write them, at most 50 counting the GPU taint (EKS's limit counts every taint " +
				"it is sent). With `gpu_taint` (the default) `nvidia.com/gpu=true:NO_SCHEDULE` is added (see `effective_taints`), leaving room for 49. Changes in place; the Auto Scaling tags follow.",
			Validators:   []validator.Set{setvalidator.SizeAtMost(50)},
			NestedObject: schema.NestedAttributeObject{Attributes: nodeGroupTaintAttributes()},
		},
		"gpu_taint": schema.BoolAttribute{
			Optional:            true,
			Computed:            true,
			Default:             booldefault.StaticBool(true),
			MarkdownDescription: "Add the taint `nvidia.com/gpu=true:NO_SCHEDULE`, which keeps pods that ask for no GPU off the nodes (the NVIDIA device plugin and `gpu_workload` tolerate it). Defaults to `true`.",
		},
		"effective_labels": schema.MapAttribute{
			Computed:            true,
			ElementType:         types.StringType,
			MarkdownDescription: "The labels the nodes get: `labels` with the GPU label added. The Auto Scaling groups carry a node-template tag for each.",
		},
		"effective_taints": schema.SetNestedAttribute{
			Computed:            true,
			MarkdownDescription: "The taints the nodes get: `taints` with the GPU taint added when `gpu_taint` is on. The Auto Scaling groups carry a node-template tag for each.",
			NestedObject:        schema.NestedAttributeObject{Attributes: nodeGroupTaintAttributes()},
		},
		"release_version": schema.StringAttribute{
			Optional:            true,
			Computed:            true,
			MarkdownDescription: "AMI release version, e.g. `1.31.4-20250123`. Unset, the latest for `version`. Changes in place (rolling).",
			PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
		"version": schema.StringAttribute{
			Optional:            true,
			Computed:            true,
			MarkdownDescription: "Kubernetes version of the nodes, e.g. `1.31`. Unset, the cluster's. Changes in place (rolling).",
			PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
		"force_update_version": schema.BoolAttribute{
			Optional:            true,
			MarkdownDescription: "Update the version even when pod disruption budgets keep nodes from draining.",
		},
		"tags": schema.MapAttribute{
			Optional:            true,
			ElementType:         types.StringType,
			MarkdownDescription: "Tags of the EKS node group resource. Changes in place.",
		},
		"wait_for": schema.StringAttribute{
			Optional: true,
			Computed: true,
			Default:  stringdefault.StaticString(nodeGroupWaitReady),
			MarkdownDescription: "What create and update wait for after EKS says ACTIVE. Valid values are: " + backtickList(nodeGroupWaitFor) +
				". `active`: EKS's status only (as `aws_eks_node_group`). `ready` (default): `desired_size` nodes of the group are Ready " +
				"in Kubernetes. `gpus_allocatable`: each of them also advertises `nvidia.com/gpu` equal to its instance type's GPU count, " +
				"which needs the NVIDIA device plugin (`gpu_device_plugin`, created before the group) or a Bottlerocket NVIDIA AMI; all " +
				"`instance_types` must then have one GPU count. The wait reaches the cluster through EKS (DescribeCluster and an EKS token) " +
				"and, on timeout, names each node and why it is not there yet; a taint of the group that the device plugins meant for its " +
				"nodes do not tolerate ends a `gpus_allocatable` wait within seconds, naming it. A wait that fails after EKS says ACTIVE " +
				"(the nodes, the Auto Scaling tags, the cluster's 401 or 403) never replaces the group: create warns and keeps it, untainted, " +
				"with `ready_nodes` as reached; update fails with the error; either way the next plan is an in-place update that waits again. " +
				"`CREATE_FAILED` from EKS itself still taints the group, as before.",
			Validators: []validator.String{stringvalidator.OneOf(nodeGroupWaitFor...)},
		},
		"arn": schema.StringAttribute{
			Computed: true, MarkdownDescription: "ARN of the node group.",
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
		"status": schema.StringAttribute{
			Computed: true, MarkdownDescription: "EKS status, e.g. `ACTIVE`, `DEGRADED`.",
		},
		"autoscaling_group_names": schema.ListAttribute{
			Computed: true, ElementType: types.StringType,
			MarkdownDescription: "Auto Scaling groups of the node group, which carry the cluster-autoscaler node-template tags.",
			PlanModifiers:       []planmodifier.List{listplanmodifier.UseStateForUnknown()},
		},
		"node_template_tags": schema.MapAttribute{
			Computed: true, ElementType: types.StringType,
			MarkdownDescription: "The cluster-autoscaler node-template tags (`k8s.io/cluster-autoscaler/node-template/...`) on the Auto Scaling groups: " +
				"one per effective label and taint, and `resources/nvidia.com/gpu`. Read back on refresh, so a tag changed or removed outside " +
				"Terraform shows as a diff here and the next apply sets it again.",
		},
		"gpu_product": schema.StringAttribute{
			Computed: true, MarkdownDescription: "NVIDIA GPU model of the instance types, as EC2 names it (e.g. `H100`); null when they differ.",
		},
		"gpus_per_node": schema.Int64Attribute{
			Computed: true, MarkdownDescription: "NVIDIA GPUs per node; null when the instance types differ.",
		},
		"gpu_memory_mib": schema.Int64Attribute{
			Computed: true, MarkdownDescription: "Memory of each GPU in MiB, as EC2 reports it; null when the instance types differ.",
		},
		"ready_nodes": schema.Int64Attribute{
			Computed: true, MarkdownDescription: "Nodes of the group Ready in Kubernetes when last read; null with `wait_for = \"active\"`, which never reaches the cluster.",
		},
		"allocatable_gpus": schema.Int64Attribute{
			Computed: true, MarkdownDescription: "`nvidia.com/gpu` allocatable on the group's nodes when last read; null with `wait_for = \"active\"`.",
		},
	}
}

func nodeGroupTaintAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"key": schema.StringAttribute{
			Required: true, MarkdownDescription: "Taint key, e.g. `nvidia.com/gpu`: " + taintKeyValidator{}.Description(context.Background()) + ".",
			Validators: []validator.String{stringvalidator.LengthBetween(1, 63), taintKeyValidator{}},
		},
		"value": schema.StringAttribute{
			Optional: true, MarkdownDescription: "Taint value: " + taintValueValidator{}.Description(context.Background()) + ".",
			Validators: []validator.String{stringvalidator.LengthAtMost(63), taintValueValidator{}},
		},
		"effect": schema.StringAttribute{
			Required: true, MarkdownDescription: "Valid values are: " + backtickList(nodeGroupTaintEffects) + " (EKS's names of NoSchedule, NoExecute, PreferNoSchedule).",
			Validators: []validator.String{stringvalidator.OneOf(nodeGroupTaintEffects...)},
		},
	}
}

// nodeGroupTaintObjectType is the type of one element of taints and effective_taints.
var nodeGroupTaintObjectType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"key": types.StringType, "value": types.StringType, "effect": types.StringType,
}}
