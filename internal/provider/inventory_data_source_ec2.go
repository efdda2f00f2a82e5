package provider

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

// This file holds gpu_inventory's source "ec2": EC2's instance-type
// catalog restricted to NVIDIA GPUs.

// inventorySortBy are the orders of instance_types, the first the default.
var inventorySortBy = []string{"instance_type", "spot_price"}

// inventorySourceFilters are the filter attributes each source takes, for
// the error that names another source's.
var inventorySourceFilters = map[string][]string{
	"kubernetes": {"product", "min_gpu_memory_gib", "min_free_gpus", "label_selector"},
	"ec2":        {"gpu_products", "min_gpu_memory_gib", "min_gpus", "max_gpus", "architectures", "availability_zones", "spot_prices"},
	"proxmox":    {"nodes", "product", "free_only"},
}

// inventorySourceFilterHint is what to use instead, per source.
var inventorySourceFilterHint = map[string]string{
	"kubernetes": "filter.product (a regular expression on GPU Feature Discovery's product name)",
	"ec2":        "filter.gpu_products (EC2's GPU names, e.g. [\"H100\", \"A100\"])",
	"proxmox":    "filter.product (a regular expression on the PCI device name), filter.nodes and filter.free_only",
}

// inventoryInstanceTypeModel is one element of gpu_inventory.instance_types.
type inventoryInstanceTypeModel struct {
	InstanceType      string             `tfsdk:"instance_type"`
	GPUProduct        string             `tfsdk:"gpu_product"`
	GPUCount          int64              `tfsdk:"gpu_count"`
	GPUMemoryMiB      int64              `tfsdk:"gpu_memory_mib"`
	VCPUs             int64              `tfsdk:"vcpus"`
	MemoryMiB         int64              `tfsdk:"memory_mib"`
	Architectures     []string           `tfsdk:"architectures"`
	AvailabilityZones []string           `tfsdk:"availability_zones"`
	SpotPrices        map[string]float64 `tfsdk:"spot_prices"`
	MinSpotPrice      *float64           `tfsdk:"min_spot_price"`
}

func inventoryInstanceTypeAttributes() map[string]schema.Attribute {
	str := func(d string) schema.Attribute { return schema.StringAttribute{Computed: true, MarkdownDescription: d} }
	num := func(d string) schema.Attribute { return schema.Int64Attribute{Computed: true, MarkdownDescription: d} }
	list := func(d string) schema.Attribute {
		return schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: d}
	}
	return map[string]schema.Attribute{
		"instance_type":      str("EC2 instance type, e.g. `p5.48xlarge`."),
		"gpu_product":        str("NVIDIA GPU model as EC2 names it, e.g. `H100`, `A10G`."),
		"gpu_count":          num("NVIDIA GPUs per instance."),
		"gpu_memory_mib":     num("Memory per GPU in MiB, as EC2 reports it (more than the driver reports: an A10G is 24576 here, 23028 to NVML)."),
		"vcpus":              num("vCPUs per instance."),
		"memory_mib":         num("Memory per instance in MiB."),
		"architectures":      list("CPU architectures as EC2 names them: `x86_64`, `arm64`."),
		"availability_zones": list("Availability Zones of the region that offer the type (within `filter.availability_zones` when set), sorted."),
		"spot_prices": schema.MapAttribute{
			Computed: true, ElementType: types.Float64Type,
			MarkdownDescription: "Latest Linux/UNIX Spot price per Availability Zone, in USD per hour; only with `filter.spot_prices = true`, else null.",
		},
		"min_spot_price": schema.Float64Attribute{
			Computed:            true,
			MarkdownDescription: "Lowest of `spot_prices`; null without `filter.spot_prices` or when EC2 has no Spot price for the type.",
		},
	}
}

func inventoryInstanceTypeObjectType() types.ObjectType {
	return types.ObjectType{AttrTypes: map[string]attr.Type{
		"instance_type": types.StringType, "gpu_product": types.StringType, "gpu_count": types.Int64Type, "gpu_memory_mib": types.Int64Type,
		"vcpus": types.Int64Type, "memory_mib": types.Int64Type,
		"architectures": types.ListType{ElemType: types.StringType}, "availability_zones": types.ListType{ElemType: types.StringType},
		"spot_prices": types.MapType{ElemType: types.Float64Type}, "min_spot_price": types.Float64Type,
	}}
}

// validateSourceFilters refuses filters of the other source: they would be
// ignored, silently selecting more than asked.
func (m *inventoryModel) validateSourceFilters() diag.Diagnostics {
	var diags diag.Diagnostics
	if m.Source.IsUnknown() || m.Source.IsNull() {
		return diags
	}
	source := m.Source.ValueString()
	if source != "ec2" && !m.SortBy.IsNull() {
		diags.AddAttributeError(path.Root("sort_by"), "Invalid gpu_inventory",
			"sort_by orders EC2's instance types: it applies with source = \"ec2\" only. Remove it (nodes are sorted by name)")
	}
	if source == "ec2" && !m.SortBy.IsUnknown() && m.SortBy.ValueString() == "spot_price" &&
		(m.Filter == nil || !m.Filter.SpotPrices.ValueBool()) && (m.Filter == nil || !m.Filter.SpotPrices.IsUnknown()) {
		diags.AddAttributeError(path.Root("sort_by"), "Invalid gpu_inventory",
			"sort_by = \"spot_price\" needs the prices: set spot_prices = true in the filter block")
	}
	f := m.Filter
	if f == nil {
		return diags
	}
	set := map[string]bool{
		"product": !f.Product.IsNull(), "min_gpu_memory_gib": !f.MinGPUMemoryGiB.IsNull(), "min_free_gpus": !f.MinFreeGPUs.IsNull(),
		"label_selector": !f.LabelSelector.IsNull(), "gpu_products": !f.GPUProducts.IsNull(), "min_gpus": !f.MinGPUs.IsNull(),
		"max_gpus": !f.MaxGPUs.IsNull(), "architectures": !f.Architectures.IsNull(), "availability_zones": !f.AvailabilityZones.IsNull(),
		"spot_prices": !f.SpotPrices.IsNull(), "nodes": !f.Nodes.IsNull(), "free_only": !f.FreeOnly.IsNull(),
	}
	for _, name := range inventoryFilterNames() {
		if !set[name] || slices.Contains(inventorySourceFilters[source], name) {
			continue
		}
		var takers []string
		for _, s := range inventorySources {
			if slices.Contains(inventorySourceFilters[s], name) {
				takers = append(takers, "\""+s+"\"")
			}
		}
		diags.AddAttributeError(path.Root("filter").AtName(name), "Invalid gpu_inventory filter",
			"filter."+name+" applies with source = "+strings.Join(takers, " or ")+" only; with source = \""+source+"\" remove it (see "+
				inventorySourceFilterHint[source]+")")
	}
	if !f.MinGPUs.IsNull() && !f.MaxGPUs.IsNull() && !f.MinGPUs.IsUnknown() && !f.MaxGPUs.IsUnknown() && f.MinGPUs.ValueInt64() > f.MaxGPUs.ValueInt64() {
		diags.AddAttributeError(path.Root("filter").AtName("min_gpus"), "Invalid gpu_inventory filter",
			"filter.min_gpus is more than filter.max_gpus: no instance type could pass; lower min_gpus or raise max_gpus")
	}
	return diags
}

// inventoryFilterNames are every source's filter attributes, sorted.
func inventoryFilterNames() []string {
	var out []string
	for _, names := range inventorySourceFilters {
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// catalogFilter is the filter block as eks takes it.
func (f *inventoryFilterModel) catalogFilter(ctx context.Context) (eks.CatalogFilter, diag.Diagnostics) {
	var cf eks.CatalogFilter
	if f == nil {
		return cf, nil
	}
	cf.GPUProducts = stringsOf(ctx, f.GPUProducts)
	cf.MinGPUMemoryGiB = f.MinGPUMemoryGiB.ValueFloat64()
	cf.MinGPUs = int(f.MinGPUs.ValueInt64())
	cf.MaxGPUs = int(f.MaxGPUs.ValueInt64())
	cf.Architectures = stringsOf(ctx, f.Architectures)
	cf.AvailabilityZones = stringsOf(ctx, f.AvailabilityZones)
	cf.SpotPrices = f.SpotPrices.ValueBool()
	return cf, nil
}

// readEC2 fills model from EC2's catalog.
func (d *InventoryDataSource) readEC2(ctx context.Context, model *inventoryModel, diags *diag.Diagnostics) {
	summary := "reading GPU inventory from EC2"
	client := d.clients.awsFor(ctx, summary, diags)
	if client == nil {
		return
	}
	filter, dd := model.Filter.catalogFilter(ctx)
	diags.Append(dd...)
	entries, err := client.GPUCatalog(ctx, filter)
	if err != nil {
		diags.AddError(summary, err.Error())
		return
	}
	models := inventoryInstanceTypes(entries)
	sortInstanceTypes(models, model.SortBy.ValueString())
	list, dd := types.ListValueFrom(ctx, inventoryInstanceTypeObjectType(), models)
	diags.Append(dd...)
	model.InstanceTypes = list
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	model.readCapacity(ctx, client, names, diags)
	model.setKubernetesOutputsNull()
	model.PCIDevices = types.ListNull(inventoryPCIDeviceObjectType())
}

func inventoryInstanceTypes(entries []eks.CatalogEntry) []inventoryInstanceTypeModel {
	out := make([]inventoryInstanceTypeModel, 0, len(entries))
	for _, e := range entries {
		m := inventoryInstanceTypeModel{
			InstanceType: e.Name, GPUProduct: e.GPU.Name, GPUCount: int64(e.GPU.Count), GPUMemoryMiB: e.GPU.MemoryMiB,
			VCPUs: int64(e.VCPUs), MemoryMiB: e.MemoryMiB,
			Architectures: append([]string{}, e.Architectures...), AvailabilityZones: append([]string{}, e.Zones...),
			SpotPrices: e.SpotPrices,
		}
		if len(e.SpotPrices) > 0 {
			lowest := math.Inf(1)
			for _, p := range e.SpotPrices {
				lowest = math.Min(lowest, p)
			}
			m.MinSpotPrice = &lowest
		}
		out = append(out, m)
	}
	return out
}

// sortInstanceTypes orders the types by name, or by lowest Spot price
// (cheapest first; types without a price last, ties by name).
func sortInstanceTypes(ts []inventoryInstanceTypeModel, by string) {
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].InstanceType < ts[j].InstanceType })
	switch by {
	case "spot_price":
		slices.SortStableFunc(ts, func(a, b inventoryInstanceTypeModel) int {
			switch {
			case a.MinSpotPrice == nil && b.MinSpotPrice == nil:
				return 0
			case a.MinSpotPrice == nil:
				return 1
			case b.MinSpotPrice == nil:
				return -1
			case *a.MinSpotPrice < *b.MinSpotPrice:
				return -1
			case *a.MinSpotPrice > *b.MinSpotPrice:
				return 1
			}
			return 0
		})
	}
}
