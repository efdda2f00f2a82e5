package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

func TestInventoryNodesValueIsKeyedByName(t *testing.T) {
	nodes := []kube.GPUNode{
		{Name: "gpu-p5-0", Product: "NVIDIA-H100-80GB-HBM3", Count: 8, Allocatable: 8, Allocated: 3, Free: 5, Ready: true,
			Labels: map[string]string{"pool": "training"}},
		{Name: "gpu-g5-0", Product: "NVIDIA-A10G", Count: 1, Allocatable: 1, Free: 1},
		{Name: "gpu-dra-0", GPUPath: kube.GPUPathDRA, Count: 1, Allocatable: 1, Allocated: 1,
			DRA: kube.DeviceCounts{Published: 3, Allocated: 2, Free: 1}, MIG: map[string]kube.DeviceCounts{"3g.40gb": {Published: 2, Allocated: 1, Free: 1}}},
	}
	withLabels, diags := inventoryNodesValue(nodes, true)
	require.False(t, diags.HasError(), errorDetails(diags))
	var decoded map[string]inventoryNodeTestModel
	require.False(t, withLabels.ElementsAs(context.Background(), &decoded, false).HasError())
	require.Equal(t, map[string]string{"pool": "training"}, decoded["gpu-p5-0"].Labels)
	require.Equal(t, int64(5), decoded["gpu-p5-0"].Free)
	require.Equal(t, "gpu-g5-0", decoded["gpu-g5-0"].Name)
	require.NotNil(t, decoded["gpu-g5-0"].Labels, "with include_labels set, a node without kept labels has an empty map, not null")
	require.Empty(t, decoded["gpu-g5-0"].Labels)
	require.Equal(t, kube.GPUPathDRA, decoded["gpu-dra-0"].GPUPath)
	require.Equal(t, deviceCountsModel{Published: 3, Allocated: 2, Free: 1}, decoded["gpu-dra-0"].DRADevices)
	require.Equal(t, map[string]deviceCountsModel{"3g.40gb": {Published: 2, Allocated: 1, Free: 1}}, decoded["gpu-dra-0"].MIGDevices)

	withoutLabels, diags := inventoryNodesValue(nodes, false)
	require.False(t, diags.HasError(), errorDetails(diags))
	p5, ok := withoutLabels.Elements()["gpu-p5-0"].(types.Object)
	require.True(t, ok)
	labels := p5.Attributes()["labels"]
	require.True(t, labels.IsNull(), "without include_labels, labels are null even when the node has some")

	empty, diags := inventoryNodesValue(nil, false)
	require.False(t, diags.HasError())
	require.False(t, empty.IsNull(), "no GPU node is an empty map, not null")
	require.Empty(t, empty.Elements())
}

func TestInventoryByProductValue(t *testing.T) {
	v, diags := inventoryByProductValue(map[string]kube.Totals{
		"NVIDIA-H100-80GB-HBM3": {Nodes: 2, GPUs: 16, Allocatable: 16, Allocated: 3, Free: 13, DevicePluginNodes: 1, DRANodes: 1,
			DRA: kube.DeviceCounts{Published: 10, Allocated: 2, Free: 8}, MIG: map[string]kube.DeviceCounts{"1g.10gb": {Published: 2, Allocated: 1, Free: 1}}},
		kube.UnknownProduct: {Nodes: 1, GPUs: 4},
	})
	require.False(t, diags.HasError(), errorDetails(diags))
	h100Object, ok := v.Elements()["NVIDIA-H100-80GB-HBM3"].(types.Object)
	require.True(t, ok)
	h100 := h100Object.Attributes()
	counts := func(published, allocated, free int64) attr.Value {
		return types.ObjectValueMust(draDeviceCountsAttrTypes, map[string]attr.Value{
			"published": types.Int64Value(published), "allocated": types.Int64Value(allocated), "unhealthy": types.Int64Value(0), "free": types.Int64Value(free),
		})
	}
	require.Equal(t, map[string]attr.Value{
		"nodes": types.Int64Value(2), "gpus": types.Int64Value(16), "allocatable": types.Int64Value(16),
		"allocated": types.Int64Value(3), "free": types.Int64Value(13),
		"device_plugin_nodes": types.Int64Value(1), "dra_nodes": types.Int64Value(1), "both_paths_nodes": types.Int64Value(0),
		"dra_devices": counts(10, 2, 8),
		"mig_devices": types.MapValueMust(draDeviceCountsType, map[string]attr.Value{"1g.10gb": counts(2, 1, 1)}),
	}, h100)
	unknownProduct, ok := v.Elements()[kube.UnknownProduct].(types.Object)
	require.True(t, ok)
	unknown := unknownProduct.Attributes()
	require.False(t, unknown["mig_devices"].IsNull(), "no MIG devices is an empty map, not null")
	require.Contains(t, v.Elements(), kube.UnknownProduct)
}

// The value types must match the schema's: State.Set fails at run time
// otherwise, which only an acceptance test would show.
func TestInventoryValueTypesMatchTheSchema(t *testing.T) {
	var resp datasource.SchemaResponse
	NewInventoryDataSource().Schema(context.Background(), datasource.SchemaRequest{}, &resp)
	require.False(t, resp.Diagnostics.HasError())
	s := resp.Schema
	require.Equal(t, types.MapType{ElemType: inventoryNodeObjectType()}, s.Attributes["nodes"].GetType())
	require.Equal(t, inventoryTotalsObjectType(), s.Attributes["totals"].GetType())
	require.Equal(t, types.MapType{ElemType: inventoryTotalsObjectType()}, s.Attributes["by_product"].GetType())
}

// BenchmarkInventoryNodesValue is the provider's share of building `nodes`
// for 5,000 nodes, without labels and with 20 labels each.
func BenchmarkInventoryNodesValue(b *testing.B) {
	nodes := make([]kube.GPUNode, 5000)
	for i := range nodes {
		labels := map[string]string{}
		for j := range 20 {
			labels[fmt.Sprintf("example.com/label-%d", j)] = "value"
		}
		nodes[i] = kube.GPUNode{Name: fmt.Sprintf("gpu-%05d", i), Product: "NVIDIA-H100-80GB-HBM3", Count: 8, Labels: labels}
	}
	for _, withLabels := range []bool{false, true} {
		b.Run(fmt.Sprintf("labels=%t", withLabels), func(b *testing.B) {
			for b.Loop() {
				if _, diags := inventoryNodesValue(nodes, withLabels); diags.HasError() {
					b.Fatal(errorDetails(diags))
				}
			}
		})
	}
}

// inventoryNodeTestModel decodes one element of `nodes`.
type deviceCountsModel struct {
	Published int64 `tfsdk:"published"`
	Allocated int64 `tfsdk:"allocated"`
	Unhealthy int64 `tfsdk:"unhealthy"`
	Free      int64 `tfsdk:"free"`
}

type gpuHealthTestModel struct {
	Status        string                  `tfsdk:"status"`
	Reason        string                  `tfsdk:"reason"`
	Message       string                  `tfsdk:"message"`
	Since         string                  `tfsdk:"since"`
	UnhealthyGPUs []unhealthyGPUTestModel `tfsdk:"unhealthy_gpus"`
}

type unhealthyGPUTestModel struct {
	Index    int64  `tfsdk:"index"`
	UUID     string `tfsdk:"uuid"`
	PCIBusID string `tfsdk:"pci_bus_id"`
	Reason   string `tfsdk:"reason"`
}

type inventoryNodeTestModel struct {
	Name              string                       `tfsdk:"name"`
	GPUPath           string                       `tfsdk:"gpu_path"`
	DRADevices        deviceCountsModel            `tfsdk:"dra_devices"`
	MIGDevices        map[string]deviceCountsModel `tfsdk:"mig_devices"`
	InstanceType      string                       `tfsdk:"instance_type"`
	Product           string                       `tfsdk:"product"`
	Family            string                       `tfsdk:"family"`
	GPUCount          int64                        `tfsdk:"gpu_count"`
	Allocatable       int64                        `tfsdk:"allocatable"`
	Allocated         int64                        `tfsdk:"allocated"`
	Free              int64                        `tfsdk:"free"`
	MemoryMiB         int64                        `tfsdk:"memory_mib"`
	ComputeCapability string                       `tfsdk:"compute_capability"`
	DriverVersion     string                       `tfsdk:"driver_version"`
	CUDAVersion       string                       `tfsdk:"cuda_version"`
	MIGStrategy       string                       `tfsdk:"mig_strategy"`
	Ready             bool                         `tfsdk:"ready"`
	Schedulable       bool                         `tfsdk:"schedulable"`
	Labels            map[string]string            `tfsdk:"labels"`
	GPUHealth         gpuHealthTestModel           `tfsdk:"gpu_health"`
}
