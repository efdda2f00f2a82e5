package provider

import (
	"context"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

var (
	_ datasource.DataSource              = &InventoryDataSource{}
	_ datasource.DataSourceWithConfigure = &InventoryDataSource{}
)

// inventorySources are the places gpu_inventory can look; later backends
// (Proxmox PCI bus, EC2 instance types) add theirs here.
var inventorySources = []string{"kubernetes"}

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
	Nodes  types.List            `tfsdk:"nodes"`
	Totals types.Object          `tfsdk:"totals"`
}

type inventoryFilterModel struct {
	Product         types.String  `tfsdk:"product"`
	MinGPUMemoryGiB types.Float64 `tfsdk:"min_gpu_memory_gib"`
	MinFreeGPUs     types.Int64   `tfsdk:"min_free_gpus"`
	LabelSelector   types.String  `tfsdk:"label_selector"`
}

func (d *InventoryDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_inventory"
}

func (d *InventoryDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Lists the NVIDIA GPUs that exist and how many are free. With `source = \"kubernetes\"` it reads the " +
			"cluster's nodes (capacity and allocatable `nvidia.com/gpu`, and the labels GPU Feature Discovery sets) and the " +
			"GPU requests of the pods running on them, in one paginated list of nodes and one of pods whatever the cluster's size.",
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
			"nodes": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The GPU nodes that pass the filter, sorted by name. Nodes without NVIDIA GPUs are never listed.",
				NestedObject:        schema.NestedAttributeObject{Attributes: inventoryNodeAttributes()},
			},
			"totals": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Sums over `nodes`.",
				Attributes:          inventoryTotalsAttributes(),
			},
		},
		Blocks: map[string]schema.Block{
			"filter": schema.SingleNestedBlock{
				MarkdownDescription: "Select nodes. Every set criterion must hold.",
				Attributes: map[string]schema.Attribute{
					"product": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Regular expression (RE2) matched against the GPU product name that GPU Feature Discovery reports, " +
							"e.g. `H100` or `^NVIDIA-A100-SXM4-(40|80)GB$`.",
						Validators: []validator.String{regexValidator{}},
					},
					"min_gpu_memory_gib": schema.Float64Attribute{
						Optional: true,
						MarkdownDescription: "Least memory per GPU, in GiB, as the driver reports it (`nvidia.com/gpu.memory`): " +
							"an A10G reports 22.5 GiB and a T4 15 GiB, less than the marketing figure.",
						Validators: []validator.Float64{float64validator.AtLeast(0)},
					},
					"min_free_gpus": schema.Int64Attribute{
						CustomType:          wholeNumberType{},
						Optional:            true,
						MarkdownDescription: "Least number of allocatable GPUs not requested by running pods.",
						Validators:          []validator.Int64{int64validator.AtLeast(0)},
					},
					"label_selector": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Kubernetes label selector applied by the API server, e.g. `node.kubernetes.io/instance-type in (p5.48xlarge)`.",
						Validators:          []validator.String{labelSelectorValidator{}},
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

func (d *InventoryDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var model inventoryModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &model)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cluster := d.clients.kubernetesFor("reading GPU inventory from Kubernetes", &resp.Diagnostics)
	if cluster == nil {
		return
	}
	filter, opts, err := model.Filter.compile()
	if err != nil {
		resp.Diagnostics.AddError("reading gpu_inventory filter", err.Error())
		return
	}
	inv, err := kube.ListInventory(ctx, cluster, opts)
	if err != nil {
		resp.Diagnostics.AddError("reading GPU inventory from Kubernetes", err.Error())
		return
	}
	inv.Nodes = filter.Select(inv.Nodes)

	nodes, diags := inventoryNodesValue(inv.Nodes)
	resp.Diagnostics.Append(diags...)
	totals, diags := inventoryTotalsValue(inv.Totals())
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	model.ID = model.Source
	model.Nodes = nodes
	model.Totals = totals
	resp.Diagnostics.Append(resp.State.Set(ctx, &model)...)
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
