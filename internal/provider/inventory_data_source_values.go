package provider

import (
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// The values of source "kubernetes": `nodes` (a map keyed by node name),
// `totals` and `by_product`. They are built as attr.Values directly, not
// through reflection on tfsdk-tagged structs, because at 5,000 nodes this
// is the provider's own share of a plan (bench/inventory-plan.sh).

func inventoryNodeAttributes() map[string]schema.Attribute {
	str := func(d string) schema.Attribute { return schema.StringAttribute{Computed: true, MarkdownDescription: d} }
	num := func(d string) schema.Attribute { return schema.Int64Attribute{Computed: true, MarkdownDescription: d} }
	return map[string]schema.Attribute{
		"name":          str("Node name (also the key of this entry in `nodes`)."),
		"instance_type": str("Value of the `node.kubernetes.io/instance-type` label, e.g. `p5.48xlarge`; empty when unset."),
		"product":       str("GPU product as GPU Feature Discovery names it (`nvidia.com/gpu.product`), e.g. `NVIDIA-H100-80GB-HBM3`."),
		"family":        str("GPU architecture family (`nvidia.com/gpu.family`), e.g. `hopper`."),
		"gpu_path": str("How the node offers its GPUs: `" + kube.GPUPathDevicePlugin + "` (`nvidia.com/gpu` capacity), `" + kube.GPUPathDRA +
			"` (devices of NVIDIA's DRA driver `gpu.nvidia.com`), `" + kube.GPUPathBoth + "` (both at once: the same GPUs offered twice, " +
			"counted once), or `" + kube.GPUPathNone + "` (GPU labels, but neither has registered a GPU yet). `gpu_count`, `allocatable`, " +
			"`allocated` and `free` are that path's, so a GPU is counted once whichever path offers it."),
		"gpu_count": num("Whole GPUs on the node: the capacity of `nvidia.com/gpu` (device plugin; 0 until it registers the GPUs), " +
			"or the whole-GPU devices the node publishes through DRA (`dra` and `both`; MIG devices are in `mig_devices`)."),
		"allocatable": num("Allocatable `nvidia.com/gpu`, or `gpu_count` through DRA."),
		"allocated": num("Device plugin: `nvidia.com/gpu` requested by the node's pods that are neither Succeeded nor Failed. " +
			"DRA: whole GPUs some ResourceClaim's allocation holds. `both`: the two added up."),
		"free": num("`allocatable` minus `allocated`, never below zero, less the GPUs the node's GPU health agent reports unhealthy " +
			"(`gpu_health`): " + inventoryHealthRule),
		"gpu_health": schema.SingleNestedAttribute{
			Computed:   true,
			Attributes: gpuHealthAttributes(),
			MarkdownDescription: "The node's GPU health as a GPU health agent (`gpu-bootstrap health-agent`, or EKS's node monitoring agent) " +
				"reports it: the node condition `" + string(gpuhealth.ConditionType) + "` and the annotation `" + gpuhealth.AnnotationUnhealthyGPUs +
				"`. Never null: on a node no agent reports on, `status` is empty and `unhealthy_gpus` is empty.",
		},
		"dra_devices":        draDevicesAttribute("Every device NVIDIA's DRA driver publishes for the node, whole GPUs and MIG devices; zeros on a device-plugin node."),
		"mig_devices":        migDevicesAttribute("The node's DRA MIG devices by profile (e.g. `1g.10gb`); empty when it has none."),
		"memory_mib":         num("Memory per GPU in MiB as the driver reports it (`nvidia.com/gpu.memory`)."),
		"compute_capability": str("CUDA compute capability, e.g. `9.0`."),
		"driver_version":     str("NVIDIA driver version (`nvidia.com/cuda.driver-version.full`), e.g. `550.54.15`."),
		"cuda_version":       str("Highest CUDA version the driver supports (`nvidia.com/cuda.runtime-version.full`), e.g. `12.4`."),
		"mig_strategy":       str("MIG strategy the device plugin runs with (`nvidia.com/mig.strategy`): `none`, `single` or `mixed`; empty when unset."),
		"ready":              schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the node's Ready condition is True."},
		"schedulable":        schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the node is not cordoned (`spec.unschedulable` is false)."},
		"labels": schema.MapAttribute{
			Computed:    true,
			ElementType: types.StringType,
			MarkdownDescription: "The node's labels that `include_labels` keeps: null when `include_labels` is unset or empty, " +
				"an empty map when the node has none of the kept keys.",
		},
	}
}

func inventoryTotalsAttributes() map[string]schema.Attribute {
	num := func(d string) schema.Attribute { return schema.Int64Attribute{Computed: true, MarkdownDescription: d} }
	return map[string]schema.Attribute{
		"nodes":               num("Number of GPU nodes counted."),
		"gpus":                num("Sum of their `gpu_count`."),
		"allocatable":         num("Sum of their `allocatable`."),
		"allocated":           num("Sum of their `allocated`."),
		"free":                num("Sum of their `free` (which leaves out GPUs reported unhealthy)."),
		"device_plugin_nodes": num("Nodes whose `gpu_path` is `" + kube.GPUPathDevicePlugin + "`."),
		"dra_nodes":           num("Nodes whose `gpu_path` is `" + kube.GPUPathDRA + "`."),
		"both_paths_nodes":    num("Nodes whose `gpu_path` is `" + kube.GPUPathBoth + "`."),
		"dra_devices":         draDevicesAttribute("Sum of their `dra_devices`."),
		"mig_devices":         migDevicesAttribute("Sum of their `mig_devices`, by profile."),
	}
}

// draDeviceCountsAttributes are the counts of DRA devices, with the rule
// that makes them the scheduler's.
func draDeviceCountsAttributes() map[string]schema.Attribute {
	num := func(d string) schema.Attribute { return schema.Int64Attribute{Computed: true, MarkdownDescription: d} }
	return map[string]schema.Attribute{
		"published": num("Devices in the ResourceSlices of driver `gpu.nvidia.com`, in each pool's newest generation only " +
			"(as the scheduler counts them while the driver rewrites its pool)."),
		"allocated": num("Those of them named in some ResourceClaim's `status.allocation.devices.results` (driver, pool, device); " +
			"admin access takes no device and is not counted."),
		"unhealthy": num("Those of them whose GPU (its `uuid`, a MIG device's `parentUUID`, or its `pciBusID`) the node's GPU health agent " +
			"lists in `gpu_health.unhealthy_gpus`, allocated or not."),
		"free": num("`published` minus `allocated`, less the unhealthy devices not allocated; 0 on a node whose `gpu_health.status` is " +
			"`False` with no GPU listed."),
	}
}

// inventoryHealthRule is how GPU health takes GPUs out of `free`
// (internal/kube/inventory_health.go), said once for every attribute that
// follows it.
const inventoryHealthRule = "a GPU listed in `gpu_health.unhealthy_gpus` is not free (device plugin: `free` = max(0, " +
	"min(`allocatable`, (GPUs − unhealthy GPUs) × shares per GPU) − `allocated`), where GPUs is GPU Feature Discovery's " +
	"`nvidia.com/gpu.count` and shares per GPU its `nvidia.com/gpu.replicas`, 1 without time-slicing; DRA: the devices of an " +
	"unhealthy GPU are not free); `gpu_health.status` `False` with no GPU listed (a fault of the whole node, such as a device count " +
	"mismatch) makes `free` 0; `True`, `Unknown` or no condition changes nothing."

// gpuHealthAttributes are a node's `gpu_health`.
func gpuHealthAttributes() map[string]schema.Attribute {
	str := func(d string) schema.Attribute { return schema.StringAttribute{Computed: true, MarkdownDescription: d} }
	return map[string]schema.Attribute{
		"status": str("The condition's status: `True` (healthy), `False` (a fatal GPU fault stands), `Unknown` (the agent cannot tell: " +
			"no driver, no GPU, NVML failing), or empty when no agent reports the condition on the node."),
		"reason": str("The condition's reason, e.g. `" + gpuhealth.ReasonReady + "` or `NvidiaXID79Error` (EKS's vocabulary); empty when not reported."),
		"message": str("The condition's message, e.g. `XID 79 on GPU 3 (GPU-…, 0000:9a:00.0): the GPU has fallen off the bus: …`; " +
			"empty when not reported."),
		"since": str("When the condition last changed status (its `lastTransitionTime`), RFC 3339 in UTC; empty when not reported."),
		"unhealthy_gpus": schema.ListNestedAttribute{
			Computed: true,
			MarkdownDescription: "The GPUs with a fatal fault, from the annotation `" + gpuhealth.AnnotationUnhealthyGPUs + "`, by index; " +
				"empty when there are none. They are not counted in `free`.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"index":      schema.Int64Attribute{Computed: true, MarkdownDescription: "NVML's index of the GPU on the node."},
				"uuid":       str("The GPU's UUID, `GPU-…`; empty when the agent could not read it."),
				"pci_bus_id": str("The GPU's PCI bus ID as NVML writes it, e.g. `00000000:9A:00.0`; empty when the agent could not read it."),
				"reason":     str("The fault's reason, e.g. `NvidiaXID79Error`."),
			}},
		},
	}
}

var unhealthyGPUAttrTypes = map[string]attr.Type{
	"index": types.Int64Type, "uuid": types.StringType, "pci_bus_id": types.StringType, "reason": types.StringType,
}

var gpuHealthAttrTypes = map[string]attr.Type{
	"status": types.StringType, "reason": types.StringType, "message": types.StringType, "since": types.StringType,
	"unhealthy_gpus": types.ListType{ElemType: types.ObjectType{AttrTypes: unhealthyGPUAttrTypes}},
}

// gpuHealthValue is a node's `gpu_health`: status and the rest empty, and
// no GPUs, when no agent reports.
func gpuHealthValue(h kube.NodeGPUHealth) (types.Object, diag.Diagnostics) {
	var diags diag.Diagnostics
	elemType := types.ObjectType{AttrTypes: unhealthyGPUAttrTypes}
	gpus := make([]attr.Value, 0, len(h.Unhealthy))
	for _, g := range h.Unhealthy {
		v, d := types.ObjectValue(unhealthyGPUAttrTypes, map[string]attr.Value{
			"index":      types.Int64Value(int64(g.Index)),
			"uuid":       types.StringValue(g.UUID),
			"pci_bus_id": types.StringValue(g.PCIBusID),
			"reason":     types.StringValue(g.Reason),
		})
		diags.Append(d...)
		gpus = append(gpus, v)
	}
	list, d := types.ListValue(elemType, gpus)
	diags.Append(d...)
	since := ""
	if h.Reported && !h.Since.IsZero() {
		since = h.Since.UTC().Format(time.RFC3339)
	}
	obj, d := types.ObjectValue(gpuHealthAttrTypes, map[string]attr.Value{
		"status":         types.StringValue(string(h.Status)),
		"reason":         types.StringValue(h.Reason),
		"message":        types.StringValue(h.Message),
		"since":          types.StringValue(since),
		"unhealthy_gpus": list,
	})
	diags.Append(d...)
	return obj, diags
}

func draDevicesAttribute(d string) schema.Attribute {
	return schema.SingleNestedAttribute{Computed: true, MarkdownDescription: d, Attributes: draDeviceCountsAttributes()}
}

func migDevicesAttribute(d string) schema.Attribute {
	return schema.MapNestedAttribute{Computed: true, MarkdownDescription: d, NestedObject: schema.NestedAttributeObject{Attributes: draDeviceCountsAttributes()}}
}

var draDeviceCountsAttrTypes = map[string]attr.Type{
	"published": types.Int64Type, "allocated": types.Int64Type, "unhealthy": types.Int64Type, "free": types.Int64Type,
}

var (
	draDeviceCountsType = types.ObjectType{AttrTypes: draDeviceCountsAttrTypes}
	migDevicesType      = types.MapType{ElemType: draDeviceCountsType}
)

var inventoryNodeAttrTypes = map[string]attr.Type{
	"name": types.StringType, "instance_type": types.StringType, "product": types.StringType, "family": types.StringType,
	"gpu_path":  types.StringType,
	"gpu_count": types.Int64Type, "allocatable": types.Int64Type, "allocated": types.Int64Type, "free": types.Int64Type,
	"dra_devices": draDeviceCountsType, "mig_devices": migDevicesType,
	"memory_mib": types.Int64Type, "compute_capability": types.StringType, "driver_version": types.StringType,
	"cuda_version": types.StringType, "mig_strategy": types.StringType, "ready": types.BoolType, "schedulable": types.BoolType,
	"labels": types.MapType{ElemType: types.StringType}, "gpu_health": types.ObjectType{AttrTypes: gpuHealthAttrTypes},
}

var inventoryTotalsAttrTypes = map[string]attr.Type{
	"nodes": types.Int64Type, "gpus": types.Int64Type, "allocatable": types.Int64Type, "allocated": types.Int64Type, "free": types.Int64Type,
	"device_plugin_nodes": types.Int64Type, "dra_nodes": types.Int64Type, "both_paths_nodes": types.Int64Type,
	"dra_devices": draDeviceCountsType, "mig_devices": migDevicesType,
}

func inventoryNodeObjectType() types.ObjectType {
	return types.ObjectType{AttrTypes: inventoryNodeAttrTypes}
}

func inventoryTotalsObjectType() types.ObjectType {
	return types.ObjectType{AttrTypes: inventoryTotalsAttrTypes}
}

// inventoryNodesValue is `nodes`: one object per node, keyed by node name.
// A node's labels are null when withLabels is false (include_labels unset).
func inventoryNodesValue(nodes []kube.GPUNode, withLabels bool) (types.Map, diag.Diagnostics) {
	var diags diag.Diagnostics
	elems := make(map[string]attr.Value, len(nodes))
	for _, n := range nodes {
		labels := types.MapNull(types.StringType)
		if withLabels {
			lv := make(map[string]attr.Value, len(n.Labels))
			for k, v := range n.Labels {
				lv[k] = types.StringValue(v)
			}
			var d diag.Diagnostics
			labels, d = types.MapValue(types.StringType, lv)
			diags.Append(d...)
		}
		dra, d := draDeviceCountsValue(n.DRA)
		diags.Append(d...)
		mig, d := migDevicesValue(n.MIG)
		diags.Append(d...)
		health, d := gpuHealthValue(n.Health)
		diags.Append(d...)
		obj, d := types.ObjectValue(inventoryNodeAttrTypes, map[string]attr.Value{
			"gpu_health":         health,
			"name":               types.StringValue(n.Name),
			"gpu_path":           types.StringValue(n.GPUPath),
			"dra_devices":        dra,
			"mig_devices":        mig,
			"instance_type":      types.StringValue(n.InstanceType),
			"product":            types.StringValue(n.Product),
			"family":             types.StringValue(n.Family),
			"gpu_count":          types.Int64Value(n.Count),
			"allocatable":        types.Int64Value(n.Allocatable),
			"allocated":          types.Int64Value(n.Allocated),
			"free":               types.Int64Value(n.Free),
			"memory_mib":         types.Int64Value(n.MemoryMiB),
			"compute_capability": types.StringValue(n.ComputeCapability),
			"driver_version":     types.StringValue(n.DriverVersion),
			"cuda_version":       types.StringValue(n.CUDAVersion),
			"mig_strategy":       types.StringValue(n.MIGStrategy),
			"ready":              types.BoolValue(n.Ready),
			"schedulable":        types.BoolValue(n.Schedulable),
			"labels":             labels,
		})
		diags.Append(d...)
		elems[n.Name] = obj
	}
	if diags.HasError() {
		return types.MapNull(inventoryNodeObjectType()), diags
	}
	m, d := types.MapValue(inventoryNodeObjectType(), elems)
	diags.Append(d...)
	return m, diags
}

func inventoryTotalsValue(t kube.Totals) (types.Object, diag.Diagnostics) {
	var diags diag.Diagnostics
	dra, d := draDeviceCountsValue(t.DRA)
	diags.Append(d...)
	mig, d := migDevicesValue(t.MIG)
	diags.Append(d...)
	v, d := types.ObjectValue(inventoryTotalsAttrTypes, map[string]attr.Value{
		"nodes":               types.Int64Value(t.Nodes),
		"gpus":                types.Int64Value(t.GPUs),
		"allocatable":         types.Int64Value(t.Allocatable),
		"allocated":           types.Int64Value(t.Allocated),
		"free":                types.Int64Value(t.Free),
		"device_plugin_nodes": types.Int64Value(t.DevicePluginNodes),
		"dra_nodes":           types.Int64Value(t.DRANodes),
		"both_paths_nodes":    types.Int64Value(t.BothPathsNodes),
		"dra_devices":         dra,
		"mig_devices":         mig,
	})
	diags.Append(d...)
	return v, diags
}

func draDeviceCountsValue(c kube.DeviceCounts) (types.Object, diag.Diagnostics) {
	return types.ObjectValue(draDeviceCountsAttrTypes, map[string]attr.Value{
		"published": types.Int64Value(c.Published),
		"allocated": types.Int64Value(c.Allocated),
		"unhealthy": types.Int64Value(c.Unhealthy),
		"free":      types.Int64Value(c.Free),
	})
}

// migDevicesValue is an empty map, not null, when there are no MIG devices,
// so that a configuration can iterate it on any node.
func migDevicesValue(byProfile map[string]kube.DeviceCounts) (types.Map, diag.Diagnostics) {
	var diags diag.Diagnostics
	elems := make(map[string]attr.Value, len(byProfile))
	for profile, c := range byProfile {
		v, d := draDeviceCountsValue(c)
		diags.Append(d...)
		elems[profile] = v
	}
	m, d := types.MapValue(draDeviceCountsType, elems)
	diags.Append(d...)
	return m, diags
}

// inventoryByProductValue is `by_product`: totals per GPU product.
func inventoryByProductValue(byProduct map[string]kube.Totals) (types.Map, diag.Diagnostics) {
	var diags diag.Diagnostics
	elems := make(map[string]attr.Value, len(byProduct))
	for product, t := range byProduct {
		v, d := inventoryTotalsValue(t)
		diags.Append(d...)
		elems[product] = v
	}
	if diags.HasError() {
		return types.MapNull(inventoryTotalsObjectType()), diags
	}
	m, d := types.MapValue(inventoryTotalsObjectType(), elems)
	diags.Append(d...)
	return m, diags
}

// setKubernetesOutputsNull nulls the outputs of source "kubernetes", for
// the other sources.
func (m *inventoryModel) setKubernetesOutputsNull() {
	m.Nodes = types.MapNull(inventoryNodeObjectType())
	m.Totals = types.ObjectNull(inventoryTotalsAttrTypes)
	m.ByProduct = types.MapNull(inventoryTotalsObjectType())
}
