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
	_ resource.Resource                   = &WorkloadResource{}
	_ resource.ResourceWithConfigure      = &WorkloadResource{}
	_ resource.ResourceWithImportState    = &WorkloadResource{}
	_ resource.ResourceWithValidateConfig = &WorkloadResource{}
	_ resource.ResourceWithModifyPlan     = &WorkloadResource{}
)

// Default bounds of the waits, when the timeouts block leaves them out.
const (
	defaultWorkloadWaitTimeout   = 30 * time.Minute
	defaultWorkloadDeleteTimeout = 10 * time.Minute
)

// WorkloadResource is `gpu_workload`: a GPU Job or Deployment.
type WorkloadResource struct {
	clients *Clients
}

// NewWorkloadResource is the constructor the provider registers.
func NewWorkloadResource() resource.Resource { return &WorkloadResource{} }

func (r *WorkloadResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_workload"
}

func (r *WorkloadResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = workloadSchema(ctx)
}

func (r *WorkloadResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	clients, diags := clientsFrom(req.ProviderData)
	resp.Diagnostics.Append(diags...)
	r.clients = clients
}

func (r *WorkloadResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan workloadModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "creating GPU workload (" + plan.identity() + ")"
	cluster := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	timeout, diags := plan.Timeouts.Create(ctx, defaultWorkloadWaitTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, err := plan.toSpec()
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	owner := newOwnership(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	created, err := cluster.CreateWorkload(ctx, spec, owner)
	if !created {
		resp.Diagnostics.AddError(summary, createErrorDetail(err, spec.ID(), "metadata.name"))
		return
	}
	// The workload exists (or may): record it even when the create's
	// answer or the wait failed, so that Terraform taints it and the next
	// apply or destroy cleans it up.
	plan.OwnerID = types.StringValue(owner.ID)
	plan.ID = types.StringValue(spec.ID())
	plan.ClaimTemplate = stringOrNull(spec.ClaimTemplateID())
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		plan.setStatus(nil)
	} else {
		r.waitAndRecord(ctx, cluster, spec, &plan, "create", timeout, summary, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// waitAndRecord waits for the workload as m asks (wait_for_completion,
// wait_for_rollout) within ctx, whose deadline is timeout (timeouts.<op>),
// and fills m's status; without a wait it reads the status once.
func (r *WorkloadResource) waitAndRecord(ctx context.Context, cluster *kube.Cluster, spec kube.WorkloadSpec, m *workloadModel, op string, timeout time.Duration, summary string, diags *diag.Diagnostics) {
	wait := m.WaitForRollout.ValueBool()
	if spec.Kind == kube.WorkloadJob {
		wait = m.WaitForCompletion.ValueBool()
	}
	var status *kube.WorkloadStatus
	var err error
	if wait {
		status, err = cluster.WaitForWorkload(ctx, spec)
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (waited %s, timeouts.%s)", err, timeout, op)
		}
	} else {
		var live kube.WorkloadLive
		var found bool
		live, found, err = cluster.ReadWorkload(ctx, spec.Ref())
		if found {
			status = &live.Status
		}
	}
	m.setStatus(status)
	if err != nil {
		diags.AddError(summary, err.Error())
	}
}

func (r *WorkloadResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state workloadModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "reading GPU workload (" + state.identity() + ")"
	cluster := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	owner := ownershipOf(state.OwnerID, "")
	if state.OwnerID.IsNull() {
		state.OwnerID = types.StringValue("") // from before owner_id
	}
	// A refresh reads every workload in state at once: the reads of a
	// namespace share a LIST (kube.RefreshWorkload), never older than the
	// read, instead of a GET each.
	live, found, err := cluster.RefreshWorkload(ctx, state.ref())
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if found && !owner.Owns(live.Spec.Owner) {
		resp.Diagnostics.AddWarning(summary, replacedOutOfBand("The "+state.Kind.ValueString()+" "+state.identity(), live.Spec.Owner))
		resp.State.RemoveResource(ctx)
		return
	}
	if !found {
		if state.Kind.ValueString() == workloadKindJob && state.Status.ValueString() == kube.PhaseComplete &&
			state.Job != nil && !state.Job.TTLSecondsAfterFinished.IsNull() {
			return // it completed and Kubernetes deleted it as ttl_seconds_after_finished asked: keep it done
		}
		resp.State.RemoveResource(ctx)
		return
	}
	state.setFromSpec(live.Spec)
	state.setStatus(&live.Status)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update changes the workload in place: a Deployment whole, a Job in the
// fields Kubernetes lets change (ModifyPlan replaces a Job for anything
// else). A change of wait settings or timeouts alone sends nothing.
func (r *WorkloadResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, prior workloadModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "updating GPU workload (" + plan.identity() + ")"
	cluster := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	timeout, diags := plan.Timeouts.Update(ctx, defaultWorkloadWaitTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, err := plan.toSpec()
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	priorSpec, err := prior.toSpec()
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	plan.ID = types.StringValue(spec.ID())
	plan.ClaimTemplate = stringOrNull(spec.ClaimTemplateID())

	if spec.Kind == kube.WorkloadJob && kube.SameWorkload(spec, priorSpec) {
		plan.workloadStatusModel = prior.workloadStatusModel
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		return
	}
	owner := ownershipOf(prior.OwnerID, "")
	warning, err := cluster.UpdateWorkload(ctx, spec, owner)
	if warning != "" {
		resp.Diagnostics.AddWarning(summary, warning)
	}
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	r.waitAndRecord(ctx, cluster, spec, &plan, "update", timeout, summary, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// Delete deletes the workload in the foreground and waits until it is
// gone, which is after its pods are: their GPUs are free when it returns.
func (r *WorkloadResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state workloadModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "deleting GPU workload (" + state.identity() + ")"
	cluster := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	timeout, diags := state.Timeouts.Delete(ctx, defaultWorkloadDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	owner := ownershipOf(state.OwnerID, "")
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := cluster.DeleteWorkload(ctx, state.ref(), owner)
	var notOwned *kube.NotOwnedError
	if errors.As(err, &notOwned) {
		resp.Diagnostics.AddWarning(summary, notOwned.Error()+": it was made again outside Terraform since this resource created it, and is left in place.")
		return
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (waited %s, timeouts.delete)", err, timeout)
		}
		resp.Diagnostics.AddError(summary, err.Error())
	}
}

// ImportState takes "namespace/name", finding whether it is a Job or a
// Deployment, or "job/namespace/name" / "deployment/namespace/name".
func (r *WorkloadResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	summary := "importing GPU workload (" + req.ID + ")"
	kind, id := "", req.ID
	for _, k := range workloadKinds {
		if rest, ok := strings.CutPrefix(req.ID, k+"/"); ok {
			kind, id = k, rest
		}
	}
	ns, name, err := parseNamespacedImportID(id)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error()+`; "job/namespace/name" and "deployment/namespace/name" name the kind too`)
		return
	}
	cluster := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if kind == "" {
		existing, found, err := cluster.FindWorkloadKind(ctx, ns, name)
		if err != nil {
			resp.Diagnostics.AddError(summary, err.Error())
			return
		}
		if !found {
			resp.Diagnostics.AddError(summary, fmt.Sprintf("there is no Job or Deployment %s/%s", ns, name))
			return
		}
		kind = string(existing)
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), ns+"/"+name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("kind"), kind)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("metadata").AtName("name"), name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("metadata").AtName("namespace"), ns)...)

	// Adopt the workload: keep the marker of one another gpu_workload
	// made, or claim an unmarked one (kubectl, Helm).
	live, found, err := cluster.ReadWorkload(ctx, kube.WorkloadRef{Kind: kube.WorkloadKind(kind), Namespace: ns, Name: name})
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if found {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("owner_id"), adoptedOwnerID(live.Spec.Owner))...)
	}
}
