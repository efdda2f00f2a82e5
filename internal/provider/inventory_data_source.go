package provider

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

var (
	_ datasource.DataSource                   = &InventoryDataSource{}
	_ datasource.DataSourceWithConfigure      = &InventoryDataSource{}
	_ datasource.DataSourceWithValidateConfig = &InventoryDataSource{}
)

// inventorySources are the places gpu_inventory can look.
var inventorySources = []string{"kubernetes", "ec2", "proxmox"}

// InventoryDataSource is `gpu_inventory`: the GPUs that exist, and which are free.
type InventoryDataSource struct {
	clients *Clients
}

// NewInventoryDataSource is the constructor the provider registers.
func NewInventoryDataSource() datasource.DataSource { return &InventoryDataSource{} }

type inventoryModel struct {
	ID     types.String          `tfsdk:"id"`
	Source types.String          `tfsdk:"source"`
	Filter *inventoryFilterModel `tfsdk:"filter"`
	// IncludeLabels, IncludeNodes, Nodes, Totals and ByProduct are source
	// "kubernetes"'s.
	IncludeLabels types.List   `tfsdk:"include_labels"`
	IncludeNodes  types.Bool   `tfsdk:"include_nodes"`
	Nodes         types.Map    `tfsdk:"nodes"`
	Totals        types.Object `tfsdk:"totals"`
	ByProduct     types.Map    `tfsdk:"by_product"`
	DRAServed     types.Bool   `tfsdk:"dra_served"`
	DRAReason     types.String `tfsdk:"dra_unavailable_reason"`
	// SortBy and InstanceTypes are source "ec2"'s (inventory_data_source_ec2.go).
	SortBy        types.String `tfsdk:"sort_by"`
	InstanceTypes types.List   `tfsdk:"instance_types"`
	// Capacity and its outputs are source "ec2"'s too (inventory_data_source_ec2_capacity.go).
	Capacity               *inventoryCapacityModel `tfsdk:"capacity"`
	CapacityReservations   types.List              `tfsdk:"capacity_reservations"`
	CapacityBlockOfferings types.List              `tfsdk:"capacity_block_offerings"`
	// PCIDevices and PCIMappings are source "proxmox"'s (inventory_data_source_proxmox*.go).
	PCIDevices  types.List `tfsdk:"pci_devices"`
	PCIMappings types.List `tfsdk:"pci_mappings"`
}

type inventoryFilterModel struct {
	Product         types.String  `tfsdk:"product"`
	MinGPUMemoryGiB types.Float64 `tfsdk:"min_gpu_memory_gib"`
	MinFreeGPUs     types.Int64   `tfsdk:"min_free_gpus"`
	LabelSelector   types.String  `tfsdk:"label_selector"`

	GPUProducts       types.List  `tfsdk:"gpu_products"`
	MinGPUs           types.Int64 `tfsdk:"min_gpus"`
	MaxGPUs           types.Int64 `tfsdk:"max_gpus"`
	Architectures     types.List  `tfsdk:"architectures"`
	AvailabilityZones types.List  `tfsdk:"availability_zones"`
	SpotPrices        types.Bool  `tfsdk:"spot_prices"`

	Nodes    types.List `tfsdk:"nodes"`
	FreeOnly types.Bool `tfsdk:"free_only"`
}

func (d *InventoryDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_inventory"
}

func (d *InventoryDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Lists the NVIDIA GPUs that exist and how many are free. With `source = \"kubernetes\"` it reads the " +
			"cluster's nodes (capacity and allocatable `nvidia.com/gpu`, and the labels GPU Feature Discovery sets), the " +
			"GPU requests of the pods running on them, the devices NVIDIA's DRA driver publishes (ResourceSlices of driver `gpu.nvidia.com`) " +
			"and the devices ResourceClaims hold, in one paginated list of each whatever the cluster's size, into `nodes` " +
			"(keyed by node name), `totals` and `by_product`. The lists are consistent reads (a GPU a pod or claim took is never shown free). " +
			"Each node says which path offers its GPUs (`gpu_path`: device plugin, DRA or both) and its GPUs are counted once, " +
			"through that path; DRA devices are also counted as devices (`dra_devices`) and MIG devices by profile (`mig_devices`). " +
			"On a cluster that does not serve `resource.k8s.io/v1`, or with credentials that may not list its ResourceSlices and ResourceClaims, " +
			"the read still succeeds with the device plugin's counts, and `dra_unavailable_reason` says why DRA devices are not counted. " +
			"Node labels are opt-in (`include_labels`) and `include_nodes = false` leaves out the per-node map: at thousands of nodes " +
			"what Terraform decodes, diffs and renders is most of a plan's time, so carry only what the configuration uses.\n\n" +
			"With `source = \"ec2\"` it lists the region's EC2 instance types with NVIDIA GPUs (DescribeInstanceTypes) with the Availability Zones " +
			"that offer them (DescribeInstanceTypeOfferings) and, with `filter.spot_prices`, the latest Spot price per zone " +
			"(DescribeSpotPriceHistory), into `instance_types`: which types give 80 GB GPUs in my zones, cheapest first. " +
			"It uses the provider's `aws` block and AWS credentials.\n\n" +
			"With `source = \"proxmox\"` it lists, per Proxmox VE node, each NVIDIA PCI function (`/nodes/{node}/hardware/pci`) with its " +
			"IDs, product name, IOMMU group, vGPU (mdev) types with free instances, the VM holding it and the cluster PCI mapping covering " +
			"it, into `pci_devices`: what to put into `gpu_passthrough_vm`'s `gpu` blocks. It uses the provider's `proxmox` block.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The source that was read.",
			},
			"source": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Where to look. Valid values are: " + backtickList(inventorySources) + ".",
				Validators:          []validator.String{stringvalidator.OneOf(inventorySources...)},
			},
			"sort_by": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Order of `instance_types` (source `ec2` only). Valid values are: " + backtickList(inventorySortBy) +
					". `instance_type` (default): by name. `spot_price`: cheapest first by `min_spot_price`, types without a price last; " +
					"needs `filter.spot_prices = true`.",
				Validators: []validator.String{stringvalidator.OneOf(inventorySortBy...)},
			},
			"instance_types": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Source `ec2`: the region's instance types with NVIDIA GPUs that pass the filter, in `sort_by` order. Null for the other sources.",
				NestedObject:        schema.NestedAttributeObject{Attributes: inventoryInstanceTypeAttributes()},
			},
			"capacity_reservations": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "Source `ec2` with `capacity.reservations = true`: the account's capacity reservations and Capacity Blocks " +
					"for ML of NVIDIA GPU types that pass the filter, earliest start first. Null otherwise.",
				NestedObject: schema.NestedAttributeObject{Attributes: inventoryReservationAttributes()},
			},
			"capacity_block_offerings": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "Source `ec2` with `capacity.offerings = true`: the Capacity Blocks EC2 offers for the instance types " +
					"that pass the filter, in `capacity.sort` order. Null otherwise.",
				NestedObject: schema.NestedAttributeObject{Attributes: inventoryOfferingAttributes()},
			},
			"pci_devices": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "Source `proxmox`: the NVIDIA PCI functions of the nodes that pass the filter, sorted by node and address " +
					"(a GPU's audio function too, with `gpu = false`). Null for the other sources.",
				NestedObject: schema.NestedAttributeObject{Attributes: inventoryPCIDeviceAttributes()},
			},
			"pci_mappings": inventoryPCIMappingsAttribute(),
			"include_labels": schema.ListAttribute{
				Optional:    true,
				ElementType: types.StringType,
				MarkdownDescription: "Source `kubernetes`: which node labels to put into each node's `labels`. Each entry is a label key " +
					"(`nvidia.com/gpu.product`), a key prefix ending in `*` (`nvidia.com/*`, `feature.node.kubernetes.io/pci-*`), or `*` " +
					"alone for every label. Unset (the default), `labels` is null: a node carries dozens of labels (kubelet's, NFD's, " +
					"GPU Feature Discovery's), and at thousands of nodes they are most of what Terraform must decode, diff and render " +
					"on every plan. A list of keys rather than an on/off switch, so a configuration pays for the labels it reads, " +
					"and a prefix so that one entry keeps a tool's family of labels.",
				Validators: []validator.List{listvalidator.UniqueValues(), includeLabelsValidator{}},
			},
			"include_nodes": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Source `kubernetes`: whether to return `nodes`. Default `true`. With `false`, `nodes` is null and " +
					"only `totals` and `by_product` are returned (for dashboards and `count` expressions over a large fleet); " +
					"the filter still applies to them.",
			},
			"nodes": schema.MapNestedAttribute{
				Computed: true,
				MarkdownDescription: "Source `kubernetes`: the GPU nodes that pass the filter, keyed by node name, so that a node " +
					"joining or leaving changes one key and no other (`for n in ...nodes` iterates them in name order). Nodes without " +
					"NVIDIA GPUs are never listed. Null with `include_nodes = false`, and for the other sources.",
				NestedObject: schema.NestedAttributeObject{Attributes: inventoryNodeAttributes()},
			},
			"totals": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Source `kubernetes`: sums over the GPU nodes that pass the filter (also with `include_nodes = false`). Null for the other sources.",
				Attributes:          inventoryTotalsAttributes(),
			},
			"dra_served": schema.BoolAttribute{
				Computed: true,
				MarkdownDescription: "Source `kubernetes`: whether the cluster serves Dynamic Resource Allocation (`resource.k8s.io/v1`, " +
					"Kubernetes 1.34 and later). When false, no node offers GPUs through DRA and `dra_unavailable_reason` says why. " +
					"Null for the other sources.",
			},
			"dra_unavailable_reason": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "Source `kubernetes`: why DRA devices are not counted, empty when they are: the cluster does not serve " +
					"`resource.k8s.io/v1` (naming its version), or the provider's credentials may not list ResourceSlices or ResourceClaims " +
					"(published devices without their allocations would show taken GPUs free, so none are counted). Every node's GPUs are " +
					"then the device plugin's, and a node that offers GPUs only through DRA is not listed. Null for the other sources.",
			},
			"by_product": schema.MapNestedAttribute{
				Computed: true,
				MarkdownDescription: "Source `kubernetes`: the same sums as `totals` per GPU product, keyed by the product GPU Feature " +
					"Discovery names (`nvidia.com/gpu.product`, e.g. `NVIDIA-H100-80GB-HBM3`); a DRA node without that label is keyed " +
					"by its devices' `productName` spelled as GPU Feature Discovery spells it (`NVIDIA H100 80GB HBM3` becomes " +
					"`NVIDIA-H100-80GB-HBM3`), so one product is one key whichever path offers it; nodes with neither are counted " +
					"under `" + kube.UnknownProduct + "`. Null for the other sources.",
				NestedObject: schema.NestedAttributeObject{Attributes: inventoryTotalsAttributes()},
			},
		},
		Blocks: map[string]schema.Block{
			"capacity": inventoryCapacityBlock(),
			"filter": schema.SingleNestedBlock{
				MarkdownDescription: "Select nodes (source `kubernetes`: `product`, `min_gpu_memory_gib`, `min_free_gpus`, `label_selector`), instance types " +
					"(source `ec2`: `gpu_products`, `min_gpu_memory_gib`, `min_gpus`, `max_gpus`, `architectures`, `availability_zones`, `spot_prices`) " +
					"or PCI devices (source `proxmox`: `nodes`, `product`, `free_only`). " +
					"Every set criterion must hold; a criterion of the other source is an error.",
				Attributes: map[string]schema.Attribute{
					"product": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Regular expression (RE2) matched against the GPU product name: source `kubernetes`, the one GPU Feature " +
							"Discovery reports, e.g. `H100` or `^NVIDIA-A100-SXM4-(40|80)GB$`; source `proxmox`, the PCI device name, e.g. `RTX A6000`.",
						Validators: []validator.String{regexValidator{}},
					},
					"min_gpu_memory_gib": schema.Float64Attribute{
						Optional: true,
						MarkdownDescription: "Least memory per GPU, in GiB. Source `kubernetes`: as the driver reports it (`nvidia.com/gpu.memory`): " +
							"an A10G reports 22.5 GiB and a T4 15 GiB, less than the marketing figure. Source `ec2`: as EC2 reports it (an A10G is 24 GiB, an H100 80 GiB).",
						Validators: []validator.Float64{float64validator.AtLeast(0)},
					},
					"min_free_gpus": schema.Int64Attribute{
						CustomType:          wholeNumberType{},
						Optional:            true,
						MarkdownDescription: "Least number of free GPUs (a node's `free`: allocatable, not requested by running pods, and not reported unhealthy by its GPU health agent).",
						Validators:          []validator.Int64{int64validator.AtLeast(0)},
					},
					"label_selector": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Kubernetes label selector applied by the API server, e.g. `node.kubernetes.io/instance-type in (p5.48xlarge)`.",
						Validators:          []validator.String{labelSelectorValidator{}},
					},
					"gpu_products": schema.ListAttribute{
						Optional:            true,
						ElementType:         types.StringType,
						MarkdownDescription: "Source `ec2`: GPU models as EC2 names them, any of which passes, case-insensitively, e.g. `[\"H100\", \"H200\", \"A100\"]`.",
						Validators:          []validator.List{listvalidator.SizeAtLeast(1)},
					},
					"min_gpus": schema.Int64Attribute{
						CustomType:          wholeNumberType{},
						Optional:            true,
						MarkdownDescription: "Source `ec2`: least number of GPUs per instance.",
						Validators:          []validator.Int64{int64validator.AtLeast(1)},
					},
					"max_gpus": schema.Int64Attribute{
						CustomType:          wholeNumberType{},
						Optional:            true,
						MarkdownDescription: "Source `ec2`: most GPUs per instance.",
						Validators:          []validator.Int64{int64validator.AtLeast(1)},
					},
					"architectures": schema.ListAttribute{
						Optional:            true,
						ElementType:         types.StringType,
						MarkdownDescription: "Source `ec2`: CPU architectures, any of which passes. Valid values are: `x86_64`, `arm64`.",
						Validators:          []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(stringvalidator.OneOf("x86_64", "arm64"))},
					},
					"availability_zones": schema.ListAttribute{
						Optional:    true,
						ElementType: types.StringType,
						MarkdownDescription: "Source `ec2`: Availability Zones (e.g. `us-west-2a`); a type passes when offered in at least one, and its " +
							"`availability_zones` and `spot_prices` are cut to them.",
						Validators: []validator.List{listvalidator.SizeAtLeast(1)},
					},
					"spot_prices": schema.BoolAttribute{
						Optional:            true,
						MarkdownDescription: "Source `ec2`: read the latest Spot price of each type in each zone (`spot_prices`, `min_spot_price`). Off by default: one more EC2 call per page of types.",
					},
					"nodes": schema.ListAttribute{
						Optional:            true,
						ElementType:         types.StringType,
						MarkdownDescription: "Source `proxmox`: the Proxmox nodes to read, e.g. `[\"pve1\"]`. Unset, every online node of the cluster.",
						Validators:          []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
					},
					"free_only": schema.BoolAttribute{
						Optional:            true,
						MarkdownDescription: "Source `proxmox`: list only functions no running VM has passed through whole (`free`).",
					},
				},
			},
		},
	}
}

func (d *InventoryDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	clients, diags := clientsFrom(req.ProviderData)
	resp.Diagnostics.Append(diags...)
	d.clients = clients
}

func (d *InventoryDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var model inventoryModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &model)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(model.validateSourceFilters()...)
	resp.Diagnostics.Append(model.validateKubernetesOnly()...)
	resp.Diagnostics.Append(model.validateCapacity()...)
}

func (d *InventoryDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var model inventoryModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &model)...)
	if resp.Diagnostics.HasError() {
		return
	}
	model.ID = model.Source
	model.PCIDevices = types.ListNull(inventoryPCIDeviceObjectType())
	model.PCIMappings = types.ListNull(inventoryPCIMappingObjectType())
	model.setCapacityOutputsNull()
	if model.Source.ValueString() == "proxmox" {
		d.readProxmox(ctx, &model, &resp.Diagnostics)
		if !resp.Diagnostics.HasError() {
			resp.Diagnostics.Append(resp.State.Set(ctx, &model)...)
		}
		return
	}
	if model.Source.ValueString() == "ec2" {
		d.readEC2(ctx, &model, &resp.Diagnostics)
		if !resp.Diagnostics.HasError() {
			resp.Diagnostics.Append(resp.State.Set(ctx, &model)...)
		}
		return
	}
	model.InstanceTypes = types.ListNull(inventoryInstanceTypeObjectType())
	cluster := d.clients.kubernetesFor("reading GPU inventory from Kubernetes", &resp.Diagnostics)
	if cluster == nil {
		return
	}
	filter, opts, err := model.Filter.compile()
	if err != nil {
		resp.Diagnostics.AddError("reading gpu_inventory filter", err.Error())
		return
	}
	includeNodes := model.IncludeNodes.IsNull() || model.IncludeNodes.ValueBool()
	if includeNodes {
		opts.Labels = inventoryLabelKeep(ctx, model.IncludeLabels)
	}
	started := time.Now()
	inv, err := cluster.ListInventory(ctx, opts)
	if err != nil {
		resp.Diagnostics.AddError("reading GPU inventory from Kubernetes", err.Error())
		return
	}
	inv.Nodes = filter.Select(inv.Nodes)
	tflog.Debug(ctx, "listed the GPU inventory", map[string]any{"nodes": len(inv.Nodes), "duration": time.Since(started).String()})

	model.Nodes = types.MapNull(inventoryNodeObjectType())
	if includeNodes {
		nodes, diags := inventoryNodesValue(inv.Nodes, !opts.Labels.None())
		resp.Diagnostics.Append(diags...)
		model.Nodes = nodes
	}
	totals, diags := inventoryTotalsValue(inv.Totals())
	resp.Diagnostics.Append(diags...)
	byProduct, diags := inventoryByProductValue(inv.ByProduct())
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	model.Totals = totals
	model.ByProduct = byProduct
	model.DRAServed = types.BoolValue(inv.DRAServed)
	model.DRAReason = types.StringValue(inv.DRAUnavailable)
	resp.Diagnostics.Append(resp.State.Set(ctx, &model)...)
	tflog.Debug(ctx, "gpu_inventory read", map[string]any{"nodes": len(inv.Nodes), "duration": time.Since(started).String()})
}

// compile turns the filter block into a post-list filter and list options.
func (f *inventoryFilterModel) compile() (kube.NodeFilter, kube.InventoryOptions, error) {
	var (
		filter kube.NodeFilter
		opts   kube.InventoryOptions
	)
	if f == nil {
		return filter, opts, nil
	}
	if p := f.Product.ValueString(); p != "" {
		re, err := regexp.Compile(p)
		if err != nil {
			return filter, opts, fmt.Errorf("filter.product %q is not a regular expression: %w", p, err)
		}
		filter.Product = re
	}
	filter.MinGPUMemoryGiB = f.MinGPUMemoryGiB.ValueFloat64()
	filter.MinFreeGPUs = f.MinFreeGPUs.ValueInt64()
	opts.LabelSelector = f.LabelSelector.ValueString()
	return filter, opts, nil
}
