package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// inventoryNodeModel is one element of gpu_inventory.nodes.
type inventoryNodeModel struct {
	Name              string            `tfsdk:"name"`
	InstanceType      string            `tfsdk:"instance_type"`
	Product           string            `tfsdk:"product"`
	Family            string            `tfsdk:"family"`
	GPUCount          int64             `tfsdk:"gpu_count"`
	Allocatable       int64             `tfsdk:"allocatable"`
	Allocated         int64             `tfsdk:"allocated"`
	Free              int64             `tfsdk:"free"`
	MemoryMiB         int64             `tfsdk:"memory_mib"`
	ComputeCapability string            `tfsdk:"compute_capability"`
	DriverVersion     string            `tfsdk:"driver_version"`
	CUDAVersion       string            `tfsdk:"cuda_version"`
	MIGStrategy       string            `tfsdk:"mig_strategy"`
	Ready             bool              `tfsdk:"ready"`
	Schedulable       bool              `tfsdk:"schedulable"`
	Labels            map[string]string `tfsdk:"labels"`
}

// inventoryTotalsModel is gpu_inventory.totals.
type inventoryTotalsModel struct {
	Nodes       int64 `tfsdk:"nodes"`
	GPUs        int64 `tfsdk:"gpus"`
	Allocatable int64 `tfsdk:"allocatable"`
	Allocated   int64 `tfsdk:"allocated"`
	Free        int64 `tfsdk:"free"`
}

func inventoryNodeAttributes() map[string]schema.Attribute {
	str := func(d string) schema.Attribute { return schema.StringAttribute{Computed: true, MarkdownDescription: d} }
	num := func(d string) schema.Attribute { return schema.Int64Attribute{Computed: true, MarkdownDescription: d} }
	return map[string]schema.Attribute{
		"name":               str("Node name."),
		"instance_type":      str("Value of the `node.kubernetes.io/instance-type` label, e.g. `p5.48xlarge`; empty when unset."),
		"product":            str("GPU product as GPU Feature Discovery names it (`nvidia.com/gpu.product`), e.g. `NVIDIA-H100-80GB-HBM3`."),
		"family":             str("GPU architecture family (`nvidia.com/gpu.family`), e.g. `hopper`."),
		"gpu_count":          num("Capacity of `nvidia.com/gpu` on the node: 0 until a device plugin registers the GPUs."),
		"allocatable":        num("Allocatable `nvidia.com/gpu`."),
		"allocated":          num("`nvidia.com/gpu` requested by the node's pods that are neither Succeeded nor Failed."),
		"free":               num("`allocatable` minus `allocated`, never below zero."),
		"memory_mib":         num("Memory per GPU in MiB as the driver reports it (`nvidia.com/gpu.memory`)."),
		"compute_capability": str("CUDA compute capability, e.g. `9.0`."),
		"driver_version":     str("NVIDIA driver version (`nvidia.com/cuda.driver-version.full`), e.g. `550.54.15`."),
		"cuda_version":       str("Highest CUDA version the driver supports (`nvidia.com/cuda.runtime-version.full`), e.g. `12.4`."),
		"mig_strategy":       str("MIG strategy the device plugin runs with (`nvidia.com/mig.strategy`): `none`, `single` or `mixed`; empty when unset."),
		"ready":              schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the node's Ready condition is True."},
		"schedulable":        schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the node is not cordoned (`spec.unschedulable` is false)."},
		"labels": schema.MapAttribute{
			Computed:            true,
			ElementType:         types.StringType,
			MarkdownDescription: "All labels of the node.",
		},
	}
}

func inventoryTotalsAttributes() map[string]schema.Attribute {
	num := func(d string) schema.Attribute { return schema.Int64Attribute{Computed: true, MarkdownDescription: d} }
	return map[string]schema.Attribute{
		"nodes":       num("Number of GPU nodes listed."),
		"gpus":        num("Sum of `gpu_count`."),
		"allocatable": num("Sum of `allocatable`."),
		"allocated":   num("Sum of `allocated`."),
		"free":        num("Sum of `free`."),
	}
}

func inventoryNodeObjectType() types.ObjectType {
	return types.ObjectType{AttrTypes: map[string]attr.Type{
		"name": types.StringType, "instance_type": types.StringType, "product": types.StringType, "family": types.StringType,
		"gpu_count": types.Int64Type, "allocatable": types.Int64Type, "allocated": types.Int64Type, "free": types.Int64Type,
		"memory_mib": types.Int64Type, "compute_capability": types.StringType, "driver_version": types.StringType,
		"cuda_version": types.StringType, "mig_strategy": types.StringType, "ready": types.BoolType, "schedulable": types.BoolType,
		"labels": types.MapType{ElemType: types.StringType},
	}}
}

func inventoryTotalsObjectType() types.ObjectType {
	return types.ObjectType{AttrTypes: map[string]attr.Type{
		"nodes": types.Int64Type, "gpus": types.Int64Type, "allocatable": types.Int64Type, "allocated": types.Int64Type, "free": types.Int64Type,
	}}
}

func inventoryNodesValue(nodes []kube.GPUNode) (types.List, diag.Diagnostics) {
	models := make([]inventoryNodeModel, len(nodes))
	for i, n := range nodes {
		models[i] = inventoryNodeModel{
			Name: n.Name, InstanceType: n.InstanceType, Product: n.Product, Family: n.Family,
			GPUCount: n.Count, Allocatable: n.Allocatable, Allocated: n.Allocated, Free: n.Free,
			MemoryMiB: n.MemoryMiB, ComputeCapability: n.ComputeCapability, DriverVersion: n.DriverVersion,
			CUDAVersion: n.CUDAVersion, MIGStrategy: n.MIGStrategy, Ready: n.Ready, Schedulable: n.Schedulable,
			Labels: n.Labels,
		}
		if models[i].Labels == nil {
			models[i].Labels = map[string]string{}
		}
	}
	return types.ListValueFrom(context.Background(), inventoryNodeObjectType(), models)
}

func inventoryTotalsValue(t kube.Totals) (types.Object, diag.Diagnostics) {
	return types.ObjectValueFrom(context.Background(), inventoryTotalsObjectType().AttrTypes, inventoryTotalsModel{
		Nodes: t.Nodes, GPUs: t.GPUs, Allocatable: t.Allocatable, Allocated: t.Allocated, Free: t.Free,
	})
}
