package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

var (
	_ resource.Resource                   = &DRADriverResource{}
	_ resource.ResourceWithConfigure      = &DRADriverResource{}
	_ resource.ResourceWithImportState    = &DRADriverResource{}
	_ resource.ResourceWithValidateConfig = &DRADriverResource{}
	_ resource.ResourceWithModifyPlan     = &DRADriverResource{}
)

// Default bounds of the waits, when the timeouts block leaves them out.
const (
	draDriverCreateTimeout = 10 * time.Minute
	draDriverUpdateTimeout = 10 * time.Minute
	draDriverDeleteTimeout = 5 * time.Minute
)

// DRADriverResource is `gpu_dra_driver`: NVIDIA's DRA driver for GPUs on a
// Kubernetes cluster.
type DRADriverResource struct {
	clients *Clients
}

// NewDRADriverResource is the constructor the provider registers.
func NewDRADriverResource() resource.Resource { return &DRADriverResource{} }

func (r *DRADriverResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_dra_driver"
}

func (r *DRADriverResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = draDriverSchema(ctx)
}

func (r *DRADriverResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	clients, diags := clientsFrom(req.ProviderData)
	resp.Diagnostics.Append(diags...)
	r.clients = clients
}

func (r *DRADriverResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan draDriverModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, diags := plan.toSpec(ctx)
	resp.Diagnostics.Append(diags...)
	summary := fmt.Sprintf("creating NVIDIA DRA driver (%s)", spec.ID())
	cluster := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, draDriverCreateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	if err := cluster.RequireDRA(ctx); err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	// Another deployment of the driver (a Helm release, a lost state) is
	// not taken over. The check fails fast; the creates themselves are
	// atomic, so one made in between is refused all the same.
	if err := cluster.DRADriverAbsent(ctx, spec); err != nil {
		resp.Diagnostics.AddError(summary, draDriverErrorDetail(err, spec.ID()))
		return
	}
	owner := newOwnership(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	created, warnings, err := cluster.CreateDRADriver(ctx, spec, owner)
	for _, w := range warnings {
		resp.Diagnostics.AddWarning(summary, w)
	}
	if !created.Exists {
		resp.Diagnostics.Append(draDriverError(summary, err, spec.ID()))
		return
	}
	// From here on the state is saved even on error, so that a failed
	// create is tainted and destroyed (namespace included), not orphaned.
	plan.OwnerID = types.StringValue(owner.ID)
	if created.NamespaceCreated {
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateNamespaceCreated, []byte("true"))...)
	}
	plan.ID = types.StringValue(spec.ID())
	plan.setStatus(kube.DRADriverStatus{})
	if err != nil {
		resp.Diagnostics.Append(draDriverError(summary, err, spec.ID()))
	} else {
		r.waitAndCount(ctx, cluster, spec, &plan, timeout, "create", summary, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// draDriverError is the diagnostic of a failed create or update: an
// extended resource the cluster dropped is the attribute's.
func draDriverError(summary string, err error, id string) diag.Diagnostic {
	if errors.Is(err, kube.ErrExtendedResourceDropped) {
		return diag.NewAttributeErrorDiagnostic(path.Root("extended_resource_name"), summary, err.Error())
	}
	return diag.NewErrorDiagnostic(summary, draDriverErrorDetail(err, id))
}

// draDriverErrorDetail is createErrorDetail, but for a DeviceClass that
// exists already: the classes are cluster-wide, so another DRA driver
// (a Helm release of NVIDIA's chart) already serves the cluster.
func draDriverErrorDetail(err error, id string) string {
	var exists *kube.ExistsError
	if errors.As(err, &exists) && exists.Kind == "DeviceClass" {
		return fmt.Sprintf("DeviceClass %s already exists: another DRA driver for NVIDIA GPUs (a Helm release of NVIDIA's chart, or another "+
			"gpu_dra_driver) serves this cluster. Import that deployment (terraform import <address> <namespace>/<name>), uninstall it, or "+
			"leave %s out of device_classes.", exists.Name, exists.Name)
	}
	return createErrorDetail(err, id, "name or namespace")
}

func (r *DRADriverResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state draDriverModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := state.Namespace.ValueString() + "/" + state.Name.ValueString()
	summary := fmt.Sprintf("reading NVIDIA DRA driver (%s)", id)
	cluster := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	owner := ownershipOf(state.OwnerID, id)
	live, found, err := cluster.ReadDRADriver(ctx, state.Namespace.ValueString(), state.Name.ValueString(), owner)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if !found {
		r.readWithoutDaemonSet(ctx, cluster, &state, owner, summary, resp)
		return
	}
	if !owner.Owns(live.Spec.Owner) {
		resp.Diagnostics.AddWarning(summary, replacedOutOfBand("DaemonSet "+live.Spec.Namespace+"/"+live.Spec.DaemonSetName(), live.Spec.Owner))
		resp.State.RemoveResource(ctx)
		return
	}
	if state.OwnerID.IsNull() {
		state.OwnerID = types.StringValue("")
	}
	state.setFromLive(live)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// readWithoutDaemonSet reads a deployment whose DaemonSet is gone. When
// nothing else of it is left it is gone: out of the state. When its RBAC
// or DeviceClasses are still there (someone deleted just the DaemonSet),
// it stays, with no image, so that the plan puts the DaemonSet back; a
// create would stop at the remaining objects.
func (r *DRADriverResource) readWithoutDaemonSet(ctx context.Context, cluster *kube.Cluster, state *draDriverModel, owner kube.Ownership, summary string, resp *resource.ReadResponse) {
	spec, diags := state.toSpec(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	remnants, err := cluster.DRADriverRemnants(ctx, spec, owner)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if len(remnants) == 0 {
		resp.State.RemoveResource(ctx)
		return
	}
	resp.Diagnostics.AddWarning(summary, fmt.Sprintf("DaemonSet %s/%s was deleted outside Terraform while the rest of the deployment (%s) is still there: "+
		"the next apply creates it again.", spec.Namespace, spec.DaemonSetName(), strings.Join(remnants, ", ")))
	state.Image = types.StringValue("")
	state.setStatus(kube.DRADriverStatus{})
	resp.Diagnostics.Append(resp.State.Set(ctx, state)...)
}

func (r *DRADriverResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, prior draDriverModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, diags := plan.toSpec(ctx)
	resp.Diagnostics.Append(diags...)
	summary := fmt.Sprintf("updating NVIDIA DRA driver (%s)", spec.ID())
	cluster := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, draDriverUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	if err := cluster.RequireDRA(ctx); err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
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
	plan.setStatus(kube.DRADriverStatus{})
	warnings, err := cluster.UpdateDRADriver(ctx, spec, owner)
	for _, w := range warnings {
		resp.Diagnostics.AddWarning(summary, w)
	}
	if err != nil {
		resp.Diagnostics.Append(draDriverError(summary, err, spec.ID()))
	} else {
		r.waitAndCount(ctx, cluster, spec, &plan, timeout, "update", summary, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *DRADriverResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state draDriverModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, diags := state.toSpec(ctx)
	resp.Diagnostics.Append(diags...)
	summary := fmt.Sprintf("deleting NVIDIA DRA driver (%s)", spec.ID())
	cluster := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	owner := ownershipOf(state.OwnerID, spec.ID())
	timeout, diags := state.Timeouts.Delete(ctx, draDriverDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	deleteDeployment(ctx, req, resp, summary, timeout, state.DeleteNamespace.ValueBool(), func(ctx context.Context, ns kube.NamespaceDeletion) (kube.DeploymentDeleted, error) {
		return cluster.DeleteDRADriver(ctx, spec, owner, ns)
	})
}

func (r *DRADriverResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importNamespaced(ctx, r.clients, req, resp, "NVIDIA DRA driver", func(ctx context.Context, cluster *kube.Cluster, namespace, name string) (string, bool, error) {
		live, found, err := cluster.ReadDRADriver(ctx, namespace, name, kube.Ownership{})
		return live.Spec.Owner, found, err
	})
}
