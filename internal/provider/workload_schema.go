package provider

import (
	"context"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
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
	workloadKinds          = []string{workloadKindJob, workloadKindDeployment}
	jobRestartPolicies     = []string{"Never", "OnFailure"}
	deploymentStrategies   = []string{"RollingUpdate", "Recreate"}
	computeCapabilityRegex = regexp.MustCompile(`^[0-9]{1,2}\.[0-9]$`)
	cudaVersionRegex       = regexp.MustCompile(`^[0-9]{1,2}\.[0-9]{1,2}$`)
	// jobInPlaceSettings are the job block's settings that Kubernetes
	// changes on a running Job (ModifyPlan finds them by building the Job;
	// TestWorkloadJobInPlaceSettingsAreWhatThePlanDoes holds this list,
	// the plan and the page's text together).
	jobInPlaceSettings = []string{"parallelism", "backoff_limit", "active_deadline_seconds", "ttl_seconds_after_finished", "suspend"}
	gpuAllocations     = []string{string(kube.AllocateDevicePlugin), string(kube.AllocateDRA)}
	migProfileRegex    = regexp.MustCompile(`^[1-8]g\.[0-9]+gb$`)
)

// Defaults that apply whether or not the block that holds them is written.
const (
	defaultWorkloadNamespace = "default"
	defaultContainerName     = "main"
	defaultBackoffLimit      = 6
	defaultJobRestartPolicy  = "Never"
	defaultDeploymentReplica = 1
	defaultStrategy          = "RollingUpdate"
)

func workloadSchema(ctx context.Context) schema.Schema {
	timeoutsBlock := resourceTimeoutsBlock(ctx, timeouts.Opts{Create: true, Update: true, Delete: true},
		"How long to wait. `create` and `update` bound `wait_for_completion` / `wait_for_rollout` "+
			"(default 30m); `delete` bounds waiting for the workload and its pods to be gone (default 10m). Positive durations as Go writes them, e.g. `90s`, `2h`.")
	return schema.Schema{
		MarkdownDescription: "Runs a GPU workload on Kubernetes: a batch `job` or a long-running `deployment` whose pods ask for GPUs by " +
			"model, memory, compute capability and count. The `gpu` block becomes the `nvidia.com/gpu` (or shared / MIG) resource limit, " +
			"required node affinity on the labels GPU Feature Discovery writes, and the `nvidia.com/gpu` toleration, so none of them is " +
			"written by hand.\n\nBy default `terraform apply` waits until a job completes or a deployment has rolled out. When a pod cannot " +
			"be scheduled the error is a diagnosis, built from the scheduler's events and each node's GPUs, e.g. " +
			"`0 of 6 nodes can run it: 1 has no NVIDIA GPU (cpu-0), 3 are not in gpu.products [NVIDIA-H100-80GB-HBM3] (...), 2 lack nvidia.com/gpu ≥ 2 free (...)`; " +
			"when no node could ever take the pod it fails at once instead of waiting for the timeout.\n\n" +
			"A Job's pod template cannot change, so for `kind = \"job\"` a change to the workload replaces it, except the `job` settings " +
			"Kubernetes changes in place (" + backtickList(jobInPlaceSettings) + ") " +
			"and the wait settings; a deployment is updated in place with server-side apply (field manager `terraform-provider-gpu`).\n\n" +
			ownershipDescription,
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`namespace/name` of the Job or Deployment.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"owner_id": ownerIDAttribute(),
			"kind": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "What to run. Valid values are: " + backtickList(workloadKinds) + ": a Kubernetes Job that runs to completion, or a Deployment that keeps its replicas running. Changing it replaces the workload.",
				Validators:          []validator.String{stringvalidator.OneOf(workloadKinds...)},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"service_account": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Service account the pods run as; the namespace's `default` when unset.",
				Validators:          []validator.String{dns1123SubdomainValidator{}},
			},
			"image_pull_secrets": schema.ListAttribute{
				Optional:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Names of `kubernetes.io/dockerconfigjson` secrets in the namespace used to pull the image, e.g. an NGC key for `nvcr.io`.",
				Validators:          []validator.List{listvalidator.ValueStringsAre(dns1123SubdomainValidator{})},
			},
			"runtime_class_name": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "RuntimeClass of the pods, e.g. `nvidia` when containerd's default runtime is not the NVIDIA one (`gpu_device_plugin` can create it).",
				Validators:          []validator.String{dns1123SubdomainValidator{}},
			},
			"node_selector": schema.MapAttribute{
				Optional:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Extra node labels the pods require, on top of what `gpu` selects, e.g. `{ \"karpenter.sh/capacity-type\" = \"on-demand\" }`.",
				Validators:          []validator.Map{labelsValidator{}},
			},
			"tolerations": schema.ListNestedAttribute{
				Optional: true,
				MarkdownDescription: "Extra tolerations of the pods. The `nvidia.com/gpu` `Exists` `NoSchedule` toleration that GPU nodes need " +
					"is always added and is not listed here.",
				NestedObject: schema.NestedAttributeObject{Attributes: tolerationAttributes()},
			},
			"shm_size": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Size of `/dev/shm`, a memory-backed `emptyDir` (e.g. `16Gi`). PyTorch DataLoader workers and NCCL " +
					"need more than the container runtime's 64 MiB default. It counts against the container's memory.",
				Validators: []validator.String{quantityValidator{}},
			},
			"wait_for_completion": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(true),
				MarkdownDescription: "For `kind = \"job\"`: wait, within `timeouts.create`, until the Job completes; a failed Job is an error " +
					"with its reason and the last pod's termination message. Set it to `false` for jobs that outlive a Terraform run. Defaults to `true`.",
			},
			"wait_for_rollout": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(true),
				MarkdownDescription: "For `kind = \"deployment\"`: wait, within `timeouts.create` / `timeouts.update`, until every replica " +
					"runs the current pod template and is available. Defaults to `true`.",
			},
			"status": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "For a job `Complete`, `Failed`, `Suspended`, `Running` or `Pending`; for a deployment `Available`, `Progressing` " +
					"or `Failed` (its progress deadline passed).",
			},
			"node_names": schema.ListAttribute{
				Computed:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Sorted names of the nodes the workload's pods run or ran on.",
			},
			"start_time": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "RFC 3339 time the Job started, or the Deployment was created; null when unknown.",
			},
			"completion_time": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "RFC 3339 time the Job completed; null until then, and always for a deployment.",
			},
			"succeeded": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Pods of the Job that succeeded; null for a deployment.",
			},
			"failed": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Pods of the Job that failed; null for a deployment.",
			},
			"resource_claim_template": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "With `gpu.allocation = \"dra\"`: `namespace/name` of the ResourceClaimTemplate the pods' GPU claims are made from " +
					"(created before the workload and deleted after it); null otherwise.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
		},
		Blocks: map[string]schema.Block{
			"metadata":   workloadMetadataBlock(),
			"container":  workloadContainerBlock(),
			"gpu":        workloadGPUBlock(),
			"job":        workloadJobBlock(),
			"deployment": workloadDeploymentBlock(),
			"volume":     workloadVolumeBlock(),
			"timeouts":   timeoutsBlock,
		},
	}
}

func workloadMetadataBlock() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Name and place of the Job or Deployment. Required.",
		Validators:          []validator.Object{objectvalidator.IsRequired()},
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Name of the Job or Deployment: a DNS-1123 subdomain of at most 63 characters (a Job's name " +
					"becomes a label value on its pods). Changing it replaces the workload.",
				Validators:    []validator.String{dns1123SubdomainValidator{}, stringvalidator.LengthAtMost(63)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"namespace": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(defaultWorkloadNamespace),
				MarkdownDescription: "Namespace, which must exist. Defaults to `default`. Changing it replaces the workload.",
				Validators:          []validator.String{dns1123LabelValidator{}},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"labels": schema.MapAttribute{
				Optional:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Labels of the workload and of its pods.",
				Validators:          []validator.Map{labelsValidator{}},
			},
			"annotations": schema.MapAttribute{
				Optional:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Annotations of the workload and of its pods: keys and values of at most 252 KiB in all (Kubernetes allows 256 KiB; the rest is kept for the annotations added to the workload and its ReplicaSets).",
				Validators:          []validator.Map{annotationsValidator{}},
			},
		},
	}
}

func workloadContainerBlock() schema.SingleNestedBlock {
	quantity := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: desc,
			Validators:          []validator.String{quantityValidator{}},
		}
	}
	return schema.SingleNestedBlock{
		MarkdownDescription: "The container that does the work. Required.",
		Validators:          []validator.Object{objectvalidator.IsRequired()},
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(defaultContainerName),
				MarkdownDescription: "Container name. Defaults to `main`.",
				Validators:          []validator.String{dns1123LabelValidator{}},
			},
			"image": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Container image, e.g. `nvcr.io/nvidia/pytorch:24.05-py3`: a reference the kubelet can pull (checked at plan).",
				Validators:          []validator.String{imageReferenceValidator{}},
			},
			"command": schema.ListAttribute{
				Optional:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Entrypoint, replacing the image's `ENTRYPOINT`.",
			},
			"args": schema.ListAttribute{
				Optional:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Arguments, replacing the image's `CMD`.",
			},
			"env": schema.MapAttribute{
				Optional:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Environment variables, e.g. `{ NCCL_DEBUG = \"INFO\" }`.",
				Validators:          []validator.Map{envNamesValidator{}},
			},
			"working_dir": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Working directory; the image's when unset.",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"cpu_request":    quantity("CPU the scheduler reserves, e.g. `4` or `500m`."),
			"memory_request": quantity("Memory the scheduler reserves, e.g. `32Gi`."),
			"cpu_limit":      quantity("Most CPU the container may use, e.g. `8`."),
			"memory_limit":   quantity("Most memory the container may use before it is OOM-killed, e.g. `64Gi`; `/dev/shm` counts against it."),
		},
	}
}

// The paths of the gpu block and of the attributes that plan-time checks
// and warnings point at.
var (
	gpuBlockPath      = path.Root("gpu")
	gpuProductsPath   = gpuBlockPath.AtName("products")
	gpuMIGProfilePath = gpuBlockPath.AtName("mig_profile")
)

func workloadGPUBlock() schema.SingleNestedBlock {
	attrs := gpuChoiceAttributes()
	attrs["shared"] = schema.BoolAttribute{
		Optional: true,
		Computed: true,
		Default:  booldefault.StaticBool(false),
		MarkdownDescription: "Ask for a share of a time-sliced or MPS GPU: the `nvidia.com/gpu.shared` resource the device plugin " +
			"advertises when sharing renames its resources. Conflicts with `mig_profile`; not available with `allocation = \"dra\"`. Defaults to `false`.",
	}
	attrs["allocation"] = schema.StringAttribute{
		Optional: true,
		Computed: true,
		Default:  stringdefault.StaticString(string(kube.AllocateDevicePlugin)),
		MarkdownDescription: "How the pods get their GPUs. Valid values are: " + backtickList(gpuAllocations) + ". `device_plugin`: the " +
			"`nvidia.com/gpu` resource NVIDIA's device plugin advertises, on nodes selected by GPU Feature Discovery's labels. `dra`: " +
			"Dynamic Resource Allocation (`resource.k8s.io/v1`, Kubernetes 1.34 or newer): a ResourceClaimTemplate whose CEL selectors " +
			"use the attributes NVIDIA's DRA driver publishes, allocated by the scheduler from the driver's ResourceSlices; " +
			"`alternative` blocks are tried in order. Defaults to `device_plugin`. Changing it replaces the workload.",
		Validators:    []validator.String{stringvalidator.OneOf(gpuAllocations...)},
		PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
	}
	attrs["min_cuda_version"] = schema.StringAttribute{
		Optional: true,
		MarkdownDescription: "Least CUDA version the node's NVIDIA driver must support, `major.minor`, e.g. `12.4`: the CUDA version " +
			"your image's CUDA toolkit was built with, unless it relies on minor version compatibility (see the section on CUDA). " +
			"Compared with GPU Feature Discovery's `nvidia.com/cuda.runtime-version.major` / `minor` labels, or with DRA the device " +
			"attribute `cudaDriverVersion`; a version no node's driver supports is refused at plan.",
		Validators: []validator.String{stringvalidator.RegexMatches(cudaVersionRegex, "must be major.minor, e.g. \"12.4\"")},
	}
	return schema.SingleNestedBlock{
		MarkdownDescription: "The GPUs each pod needs. Required. Every set criterion must hold. With the device plugin they become " +
			"required node affinity on the labels of GPU Feature Discovery (`nvidia.com/gpu.product`, `nvidia.com/gpu.memory`, " +
			"`nvidia.com/gpu.compute.major` / `minor`, `nvidia.com/cuda.runtime-version.major` / `minor`), so nodes without GFD labels " +
			"only match when no criterion but `count` is set; with `allocation = \"dra\"` they become CEL selectors of a ResourceClaimTemplate.",
		Validators: []validator.Object{objectvalidator.IsRequired()},
		Attributes: attrs,
		Blocks: map[string]schema.Block{
			"alternative": schema.ListNestedBlock{
				MarkdownDescription: "With `allocation = \"dra\"`: what else each pod can run on when the criteria above cannot be met, " +
					"in order of preference, e.g. one H100, else two A100 80GB. Each becomes a subrequest of the claim's `firstAvailable` " +
					"list; `min_cuda_version` holds for each. Repeatable.",
				NestedObject: schema.NestedBlockObject{Attributes: gpuChoiceAttributes()},
			},
		},
	}
}

// gpuChoiceAttributes are what one choice of GPUs asks for: the gpu
// block's own criteria, and each alternative's.
func gpuChoiceAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"count": schema.Int64Attribute{
			CustomType:          wholeNumberType{},
			Required:            true,
			MarkdownDescription: "GPUs per pod (the resource limit, or the claim's device count). At least 1; all on one node.",
			Validators:          []validator.Int64{int64validator.AtLeast(1)},
		},
		"products": schema.ListAttribute{
			Optional:    true,
			ElementType: types.StringType,
			MarkdownDescription: "Acceptable GPU models, as GFD spells them in `nvidia.com/gpu.product`, e.g. `NVIDIA-H100-80GB-HBM3`, " +
				"`NVIDIA-A100-SXM4-80GB`, `NVIDIA-A10G`, `Tesla-T4`. Any when unset. With `shared`, GFD's `-SHARED` variants match too. " +
				"With DRA the driver's `productName` (`NVIDIA H100 80GB HBM3`) is compared with its spaces turned into dashes, so the same names work.",
			Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
		},
		"min_memory_gib": schema.Int64Attribute{
			CustomType: wholeNumberType{},
			Optional:   true,
			MarkdownDescription: "Least memory per GPU, in GiB, compared with `nvidia.com/gpu.memory` (MiB, as the driver reports it) or " +
				"the DRA device's `memory` capacity. The driver reports less than the marketing size: an 80 GB H100 has 81559 MiB (79.6 GiB), so ask for `79` to include it.",
			Validators: []validator.Int64{int64validator.AtLeast(1)},
		},
		"min_compute_capability": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Least CUDA compute capability, `major.minor`, e.g. `8.0` (A100), `8.6` (A10G), `8.9` (L4, L40S), `9.0` (H100). " +
				"Compared as a version: `8.6` accepts 8.6, 8.9 and 9.0 but not 8.0.",
			Validators: []validator.String{stringvalidator.RegexMatches(computeCapabilityRegex, "must be major.minor, e.g. \"8.0\"")},
		},
		"mig_profile": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Ask for MIG instances of this profile instead of whole GPUs, e.g. `1g.10gb` requests " +
				"`nvidia.com/mig-1g.10gb` (the device plugin's `mixed` MIG strategy), or with DRA devices of class `mig.nvidia.com` " +
				"whose `profile` is `1g.10gb`. Conflicts with `shared`.",
			Validators: []validator.String{stringvalidator.RegexMatches(migProfileRegex, "must be a MIG profile such as \"1g.10gb\" or \"3g.40gb\"")},
		},
	}
}

func workloadJobBlock() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Job settings; only with `kind = \"job\"`. The defaults apply when the block is left out.",
		Attributes: map[string]schema.Attribute{
			"backoff_limit": schema.Int64Attribute{
				CustomType: wholeNumberType{}, Optional: true, Computed: true, Default: int64default.StaticInt64(defaultBackoffLimit),
				MarkdownDescription: "Retries before the Job is Failed. Defaults to `6`, as in Kubernetes.",
				Validators:          []validator.Int64{int64validator.AtLeast(0)},
			},
			"completions": schema.Int64Attribute{
				CustomType: wholeNumberType{}, Optional: true, Computed: true, Default: int64default.StaticInt64(1),
				MarkdownDescription: "Pods that must succeed. Defaults to `1`.",
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
			},
			"parallelism": schema.Int64Attribute{
				CustomType: wholeNumberType{}, Optional: true, Computed: true, Default: int64default.StaticInt64(1),
				MarkdownDescription: "Pods that may run at once, each with `gpu.count` GPUs. Defaults to `1`.",
				Validators:          []validator.Int64{int64validator.AtLeast(0)},
			},
			"active_deadline_seconds": schema.Int64Attribute{
				CustomType:          wholeNumberType{},
				Optional:            true,
				MarkdownDescription: "Seconds after which a still-running Job is Failed (reason `DeadlineExceeded`).",
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
			},
			"ttl_seconds_after_finished": schema.Int64Attribute{
				CustomType: wholeNumberType{},
				Optional:   true,
				MarkdownDescription: "Seconds after it finishes that Kubernetes deletes the Job. A completed Job deleted this way stays in " +
					"the Terraform state instead of being created again.",
				Validators: []validator.Int64{int64validator.AtLeast(0)},
			},
			"suspend": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Create the Job without starting pods, or, set later, stop its running pods (they count as neither " +
					"succeeded nor failed) until it is set back to `false`. A suspended Job is not waited for. Defaults to `false`.",
			},
			"restart_policy": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(defaultJobRestartPolicy),
				MarkdownDescription: "What a failed container does. Valid values are: " + backtickList(jobRestartPolicies) +
					" (`Never`: a new pod per retry; `OnFailure`: restart in place). Defaults to `Never`.",
				Validators: []validator.String{stringvalidator.OneOf(jobRestartPolicies...)},
			},
		},
	}
}

func workloadDeploymentBlock() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Deployment settings; only with `kind = \"deployment\"`. The defaults apply when the block is left out.",
		Attributes: map[string]schema.Attribute{
			"replicas": schema.Int64Attribute{
				CustomType: wholeNumberType{}, Optional: true, Computed: true, Default: int64default.StaticInt64(defaultDeploymentReplica),
				MarkdownDescription: "Pods to keep running, each with `gpu.count` GPUs. Defaults to `1`.",
				Validators:          []validator.Int64{int64validator.AtLeast(0)},
			},
			"strategy": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(defaultStrategy),
				MarkdownDescription: "How pods are replaced on a change. Valid values are: " + backtickList(deploymentStrategies) +
					". `Recreate` stops the old pods first, so a fully used GPU node can take the new ones. Defaults to `RollingUpdate`.",
				Validators: []validator.String{stringvalidator.OneOf(deploymentStrategies...)},
			},
		},
	}
}

func workloadVolumeBlock() schema.ListNestedBlock {
	return schema.ListNestedBlock{
		MarkdownDescription: "A PersistentVolumeClaim mounted into the container, e.g. a dataset or a checkpoint workspace. Repeatable.",
		NestedObject: schema.NestedBlockObject{
			Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{
					Required:            true,
					MarkdownDescription: "Volume name, unique in the workload.",
					Validators:          []validator.String{dns1123LabelValidator{}},
				},
				"claim_name": schema.StringAttribute{
					Required:            true,
					MarkdownDescription: "Name of the PersistentVolumeClaim in the workload's namespace.",
					Validators:          []validator.String{dns1123SubdomainValidator{}},
				},
				"mount_path": schema.StringAttribute{
					Required:            true,
					MarkdownDescription: "Absolute path in the container, e.g. `/workspace`.",
					Validators:          []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^/`), "must be an absolute path")},
				},
				"read_only": schema.BoolAttribute{
					Optional: true, Computed: true, Default: booldefault.StaticBool(false),
					MarkdownDescription: "Mount read-only. Defaults to `false`.",
				},
			},
		},
	}
}
