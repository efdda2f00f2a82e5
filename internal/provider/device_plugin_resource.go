package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

var (
	_ resource.Resource                   = &DevicePluginResource{}
	_ resource.ResourceWithConfigure      = &DevicePluginResource{}
	_ resource.ResourceWithImportState    = &DevicePluginResource{}
	_ resource.ResourceWithValidateConfig = &DevicePluginResource{}
)

// Default bounds of the waits, when the timeouts block leaves them out.
const (
	devicePluginCreateTimeout = 10 * time.Minute
	devicePluginUpdateTimeout = 10 * time.Minute
	devicePluginDeleteTimeout = 5 * time.Minute
)

// privateNamespaceCreated is the private-state key that records that this
// resource created its namespace, and so deletes it.
const privateNamespaceCreated = "namespace_created"

// DevicePluginResource is `gpu_device_plugin`: NVIDIA's device plugin and
// its companions on a Kubernetes cluster.
type DevicePluginResource struct {
	clients *Clients
}

// NewDevicePluginResource is the constructor the provider registers.
func NewDevicePluginResource() resource.Resource { return &DevicePluginResource{} }

func (r *DevicePluginResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_device_plugin"
}

func (r *DevicePluginResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = devicePluginSchema(ctx)
}

func (r *DevicePluginResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	clients, diags := clientsFrom(req.ProviderData)
	resp.Diagnostics.Append(diags...)
	r.clients = clients
}

func (r *DevicePluginResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var config devicePluginModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(config.Config.validateSharing(path.Root("config"))...)
	resp.Diagnostics.Append(validateRequestsWithinLimits(ctx, config.Resources)...)
	resp.Diagnostics.Append(config.HealthAgent.validate(ctx)...)
}

func (r *DevicePluginResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan devicePluginModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, diags := plan.toSpec(ctx)
	resp.Diagnostics.Append(diags...)
	summary := fmt.Sprintf("creating NVIDIA device plugin (%s)", spec.ID())
	cluster := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, devicePluginCreateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// Another deployment of the plugin (a Helm release, kubectl apply) is
	// not taken over: it is imported, or named differently. The check
	// fails fast; the creates themselves are atomic, so a deployment made
	// in between is refused all the same.
	if err := cluster.DevicePluginAbsent(ctx, spec); err != nil {
		resp.Diagnostics.AddError(summary, devicePluginCreateErrorDetail(err, spec.ID()))
		return
	}
	owner := newOwnership(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	created, warnings, err := cluster.CreateDevicePlugin(ctx, spec, owner)
	for _, w := range warnings {
		resp.Diagnostics.AddWarning(summary, w)
	}
	if !created.Exists {
		// Nothing of this create is left on the cluster: no state.
		resp.Diagnostics.AddError(summary, devicePluginCreateErrorDetail(err, spec.ID()))
		return
	}
	// From here on the state is saved even on error, so that a failed
	// create is tainted and destroyed (namespace included), not orphaned.
	plan.OwnerID = types.StringValue(owner.ID)
	if created.NamespaceCreated {
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateNamespaceCreated, []byte("true"))...)
	}
	plan.ID = types.StringValue(spec.ID())
	plan.setStatus(spec.Config, kube.DevicePluginStatus{})
	if err != nil {
		resp.Diagnostics.AddError(summary, devicePluginCreateErrorDetail(err, spec.ID()))
	} else {
		r.waitAndCount(ctx, cluster, spec, &plan, timeout, "create", summary, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// devicePluginCreateErrorDetail is createErrorDetail, but for a
// RuntimeClass that exists already: it is shared cluster-wide, so the way
// out is to use it rather than import it.
func devicePluginCreateErrorDetail(err error, id string) string {
	var exists *kube.ExistsError
	if errors.As(err, &exists) && exists.Kind == "RuntimeClass" {
		return fmt.Sprintf("%s. To run the plugin with it, set runtime_class.create = false; or choose another runtime_class.name.", exists)
	}
	return createErrorDetail(err, id, "name or namespace")
}

func (r *DevicePluginResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state devicePluginModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := state.Namespace.ValueString() + "/" + state.Name.ValueString()
	summary := fmt.Sprintf("reading NVIDIA device plugin (%s)", id)
	cluster := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	owner := ownershipOf(state.OwnerID, id)
	live, found, err := cluster.ReadDevicePlugin(ctx, state.Namespace.ValueString(), state.Name.ValueString(), owner)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if !found {
		r.readWithoutDaemonSet(ctx, cluster, &state, owner, summary, resp)
		return
	}
	if !owner.Owns(live.Spec.Owner) {
		resp.Diagnostics.AddWarning(summary, replacedOutOfBand("DaemonSet "+id, live.Spec.Owner))
		resp.State.RemoveResource(ctx)
		return
	}
	if state.DeleteNamespace.IsNull() {
		state.DeleteNamespace = types.BoolValue(false) // imported
	}
	if state.OwnerID.IsNull() {
		state.OwnerID = types.StringValue("") // from before owner_id
	}
	if live.ConfigProblem != "" {
		resp.Diagnostics.AddWarning(summary, "The plugin's config file cannot be read: "+live.ConfigProblem+
			". The next apply writes it again from the configuration.")
	}
	if live.HealthAgentProblem != "" {
		resp.Diagnostics.AddWarning(summary, "The GPU health agent's settings cannot be read: "+live.HealthAgentProblem+
			". The next apply writes them again from the configuration.")
	}
	state.setFromLive(live)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// readWithoutDaemonSet reads a deployment whose plugin DaemonSet is gone.
// When nothing else of it is left it is gone: out of the state. When its
// ConfigMap or other components are still there (someone deleted just the
// DaemonSet), it stays, with no image, so that the plan puts the DaemonSet
// back; a create would stop at the remaining objects.
func (r *DevicePluginResource) readWithoutDaemonSet(ctx context.Context, cluster *kube.Cluster, state *devicePluginModel, owner kube.Ownership, summary string, resp *resource.ReadResponse) {
	spec, diags := state.toSpec(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	remnants, err := cluster.DevicePluginRemnants(ctx, spec, owner)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if len(remnants) == 0 {
		resp.State.RemoveResource(ctx)
		return
	}
	resp.Diagnostics.AddWarning(summary, fmt.Sprintf("DaemonSet %s was deleted outside Terraform while the rest of the deployment (%s) is still there: "+
		"the next apply creates it again.", spec.ID(), strings.Join(remnants, ", ")))
	state.Image = types.StringValue("")
	state.setStatus(spec.Config, kube.DevicePluginStatus{})
	resp.Diagnostics.Append(resp.State.Set(ctx, state)...)
}

func (r *DevicePluginResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, prior devicePluginModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, diags := plan.toSpec(ctx)
	resp.Diagnostics.Append(diags...)
	priorSpec, diags := prior.toSpec(ctx)
	resp.Diagnostics.Append(diags...)
	summary := fmt.Sprintf("updating NVIDIA device plugin (%s)", spec.ID())
	cluster := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, devicePluginUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	owner := ownershipOf(prior.OwnerID, spec.ID())
	plan.OwnerID = prior.OwnerID
	// The namespace may have been deleted out of band with the DaemonSet.
	created, err := cluster.EnsureNamespace(ctx, spec.Namespace, owner)
	if created {
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateNamespaceCreated, []byte("true"))...)
	}
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	plan.ID = types.StringValue(spec.ID())
	plan.setStatus(spec.Config, kube.DevicePluginStatus{})
	warnings, err := cluster.UpdateDevicePlugin(ctx, spec, priorSpec, owner)
	for _, w := range warnings {
		resp.Diagnostics.AddWarning(summary, w)
	}
	if err != nil {
		resp.Diagnostics.AddError(summary, devicePluginCreateErrorDetail(err, spec.ID()))
	} else {
		r.waitAndCount(ctx, cluster, spec, &plan, timeout, "update", summary, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *DevicePluginResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state devicePluginModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, diags := state.toSpec(ctx)
	resp.Diagnostics.Append(diags...)
	summary := fmt.Sprintf("deleting NVIDIA device plugin (%s)", spec.ID())
	cluster := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	owner := ownershipOf(state.OwnerID, spec.ID())
	timeout, diags := state.Timeouts.Delete(ctx, devicePluginDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	deleteDeployment(ctx, req, resp, summary, timeout, state.DeleteNamespace.ValueBool(), func(ctx context.Context, ns kube.NamespaceDeletion) (kube.DeploymentDeleted, error) {
		return cluster.DeleteDevicePlugin(ctx, spec, owner, ns)
	})
}

func (r *DevicePluginResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importNamespaced(ctx, r.clients, req, resp, "NVIDIA device plugin", func(ctx context.Context, cluster *kube.Cluster, namespace, name string) (string, bool, error) {
		live, found, err := cluster.ReadDevicePlugin(ctx, namespace, name, kube.Ownership{})
		return live.Spec.Owner, found, err
	})
}
