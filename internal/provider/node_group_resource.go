package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/eks"
)

var (
	_ resource.Resource                   = &NodeGroupResource{}
	_ resource.ResourceWithConfigure      = &NodeGroupResource{}
	_ resource.ResourceWithImportState    = &NodeGroupResource{}
	_ resource.ResourceWithValidateConfig = &NodeGroupResource{}
	_ resource.ResourceWithModifyPlan     = &NodeGroupResource{}
)

// Default bounds of the waits, when the timeouts block leaves them out
// (aws_eks_node_group's).
const (
	nodeGroupCreateTimeout = 60 * time.Minute
	nodeGroupUpdateTimeout = 60 * time.Minute
	nodeGroupDeleteTimeout = 60 * time.Minute
)

// NodeGroupResource is `gpu_node_group`: an EKS managed node group of
// NVIDIA GPU instances.
type NodeGroupResource struct {
	clients *Clients
}

// NewNodeGroupResource is the constructor the provider registers.
func NewNodeGroupResource() resource.Resource { return &NodeGroupResource{} }

func (r *NodeGroupResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_node_group"
}

func (r *NodeGroupResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = nodeGroupSchema(ctx)
}

func (r *NodeGroupResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	clients, diags := clientsFrom(req.ProviderData)
	resp.Diagnostics.Append(diags...)
	r.clients = clients
}

func (r *NodeGroupResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var config nodeGroupModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(config.validate(ctx)...)
}

func (r *NodeGroupResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan, config nodeGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if plan.NodeGroupName.IsUnknown() {
		prefix := plan.NodeGroupNamePrefix.ValueString()
		if prefix == "" {
			prefix = "terraform-"
		}
		plan.NodeGroupName = types.StringValue(prefix + uniqueSuffix())
	}
	summary := "creating EKS node group " + plan.describe()
	client := r.clients.awsFor(ctx, summary, &resp.Diagnostics)
	if client == nil {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, nodeGroupCreateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// Values unknown at plan (instance types from another resource) are
	// checked now, still before any write.
	if plan.AMIType.IsUnknown() || plan.GPUsPerNode.IsUnknown() || plan.GPUProduct.IsUnknown() {
		r.checkAgainstEC2(ctx, &plan, &config, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(plan.planEffective(ctx)...)
	spec, diags := plan.toSpec(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, ok := r.prepareCapacity(ctx, client, nil, &plan, spec, summary, &resp.Diagnostics) // node_group_capacity.go
	if !ok {
		return
	}

	start := time.Now()
	live, err := client.CreateNodeGroup(ctx, spec, newClientRequestToken())
	if err == nil {
		tflog.Debug(ctx, "created EKS node group", map[string]any{"node_group": spec.Name, "duration": time.Since(start).String()})
	}
	if err != nil && live.Name == "" {
		// EKS accepted nothing: nothing to keep in the state.
		dropCapacityTemplate(ctx, client, &plan, &resp.Diagnostics)
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	// From here on the state is saved even on error, so that a failed
	// create is tainted and destroyed by the next apply, never orphaned.
	resp.Diagnostics.Append(plan.setFromLive(ctx, live)...)
	plan.ReadyNodes, plan.AllocatableGPUs = types.Int64Null(), types.Int64Null()
	if err != nil {
		plan.NodeTemplateTags = types.MapNull(types.StringType)
		resp.Diagnostics.AddError(summary, nodeGroupFailureDetail(err))
	} else if err := r.afterApply(ctx, client, nil, &plan, &resp.Diagnostics); err != nil {
		// ACTIVE: an error would taint it, and the next apply replace it.
		resp.Diagnostics.AddWarning(summary, waitFailureDetail(err, &plan))
		resp.Diagnostics.Append(markWaitFailed(ctx, resp.Private, err)...)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *NodeGroupResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state nodeGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "reading EKS node group " + state.describe()
	client := r.clients.awsFor(ctx, summary, &resp.Diagnostics)
	if client == nil {
		return
	}
	cluster, name := state.ClusterName.ValueString(), state.NodeGroupName.ValueString()
	live, found, err := client.ReadNodeGroup(ctx, cluster, name)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if !found {
		resp.Diagnostics.AddWarning(summary, fmt.Sprintf("EKS node group %q of cluster %q no longer exists (deleted outside Terraform): "+
			"it is removed from the state, and the next apply creates it again.", name, cluster))
		resp.State.RemoveResource(ctx)
		return
	}
	if state.GPUTaint.IsNull() { // imported
		state.GPUTaint = types.BoolValue(slices.Contains(live.Taints, nodeGroupGPUTaint))
	}
	if state.WaitFor.IsNull() {
		state.WaitFor = types.StringValue(nodeGroupWaitReady)
	}
	resp.Diagnostics.Append(state.setFromLive(ctx, live)...)
	readCapacity(ctx, client, &state, live, summary, &resp.Diagnostics)
	if len(live.Health) > 0 {
		resp.Diagnostics.AddWarning(summary, nodeGroupFailureDetail(&eks.NodeGroupFailedError{
			ClusterName: cluster, Name: name, Status: live.Status, Health: live.Health,
		}))
	}
	if state.GPUsPerNode.IsNull() && state.GPUProduct.IsNull() {
		names := stringsOf(ctx, state.InstanceTypes)
		if facts, err := client.InstanceTypes(ctx, names); err == nil {
			state.setGPUFacts(names, facts)
		} else {
			resp.Diagnostics.AddWarning(summary, "reading the instance types' GPUs (EC2 DescribeInstanceTypes): "+err.Error())
		}
	}
	readNodeTemplateTags(ctx, client, &state, summary, &resp.Diagnostics)
	r.readNodes(ctx, &state, summary, &resp.Diagnostics)
	if _, failed := waitFailed(ctx, req.Private); failed && state.waitSatisfied() {
		resp.Diagnostics.Append(clearWaitFailed(ctx, resp.Private)...)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *NodeGroupResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, prior nodeGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "updating EKS node group " + plan.describe()
	client := r.clients.awsFor(ctx, summary, &resp.Diagnostics)
	if client == nil {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, nodeGroupUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	priorSpec, diags := prior.toSpec(ctx)
	resp.Diagnostics.Append(diags...)
	spec, diags := plan.toSpec(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	priorSpec = priorCapacitySpec(&prior, priorSpec)
	spec, ok := r.prepareCapacity(ctx, client, &prior, &plan, spec, summary, &resp.Diagnostics)
	if !ok {
		return
	}
	start := time.Now()
	live, err := client.UpdateNodeGroup(ctx, priorSpec, spec)
	if err != nil {
		resp.Diagnostics.AddError(summary, nodeGroupFailureDetail(err))
		return
	}
	tflog.Debug(ctx, "updated EKS node group", map[string]any{"node_group": spec.Name, "duration": time.Since(start).String()})
	resp.Diagnostics.Append(plan.setFromLive(ctx, live)...)
	plan.ReadyNodes, plan.AllocatableGPUs = types.Int64Null(), types.Int64Null()
	if err := r.afterApply(ctx, client, &prior, &plan, &resp.Diagnostics); err != nil {
		resp.Diagnostics.AddError(summary, waitFailureDetail(err, &plan))
		resp.Diagnostics.Append(markWaitFailed(ctx, resp.Private, err)...)
	} else {
		resp.Diagnostics.Append(clearWaitFailed(ctx, resp.Private)...)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *NodeGroupResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state nodeGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "deleting EKS node group " + state.describe()
	client := r.clients.awsFor(ctx, summary, &resp.Diagnostics)
	if client == nil {
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, nodeGroupDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	err := client.DeleteNodeGroup(ctx, state.ClusterName.ValueString(), state.NodeGroupName.ValueString())
	if err != nil {
		resp.Diagnostics.AddError(summary, nodeGroupFailureDetail(err))
		return
	}
	deleteCapacityTemplate(ctx, client, &state, summary, &resp.Diagnostics)
	tflog.Debug(ctx, "deleted EKS node group", map[string]any{"node_group": state.NodeGroupName.ValueString(), "duration": time.Since(start).String()})
}

// ImportState takes `cluster_name:node_group_name`.
func (r *NodeGroupResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	cluster, name, ok := strings.Cut(req.ID, ":")
	if !ok || cluster == "" || name == "" || strings.Contains(name, ":") {
		resp.Diagnostics.AddError("importing EKS node group",
			fmt.Sprintf("import ID %q is not of the form cluster_name:node_group_name, e.g. \"prod:gpu-p5\"", req.ID))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("cluster_name"), cluster)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("node_group_name"), name)...)
}

// nodeGroupFailureDetail is an error's text, with what to do for the
// failures EKS reports on the group itself.
func nodeGroupFailureDetail(err error) string {
	var (
		failed *eks.NodeGroupFailedError
		gone   *eks.NodeGroupGoneError
	)
	switch {
	case errors.As(err, &failed):
		return err.Error() + "\n\nThe node group is kept in the state and tainted: fix the cause (see each health issue), then apply again " +
			"to replace it, or destroy it."
	case errors.As(err, &gone):
		return err.Error() + ": it was deleted outside Terraform. The next refresh removes it from the state, and the next apply creates it again."
	}
	return err.Error()
}
