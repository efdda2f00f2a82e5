package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/kubernetes"

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
	client := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	timeout, diags := plan.Timeouts.Create(ctx, defaultWorkloadWaitTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var seenJob *batchv1.Job // the last version of the Job the wait saw
	var err, waitErr error
	switch plan.Kind.ValueString() {
	case workloadKindJob:
		seenJob, waitErr, err = createJob(ctx, client, &plan)
	case workloadKindDeployment:
		waitErr, err = createDeployment(ctx, client, &plan)
	}
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	// The workload exists: record it even when the wait failed, so that
	// Terraform taints it and the next apply or destroy cleans it up.
	plan.ID = types.StringValue(plan.identity())
	resp.Diagnostics.Append(r.readStatus(ctx, client, &plan, seenJob)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	if waitErr != nil {
		resp.Diagnostics.AddError(summary, waitErr.Error())
	}
}

// createJob creates the Job and, with wait_for_completion, waits for it.
// err means nothing was created; waitErr that the Job exists but failed or
// did not complete.
func createJob(ctx context.Context, client kubernetes.Interface, plan *workloadModel) (seen *batchv1.Job, waitErr, err error) {
	job, err := plan.job()
	if err == nil {
		job, err = client.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{FieldManager: kube.FieldManager})
	}
	if err != nil {
		return nil, nil, errors.New(createError("Job", plan, err))
	}
	if !plan.WaitForCompletion.ValueBool() {
		return job, nil, nil
	}
	last, waitErr := waitJobComplete(ctx, client, job, plan.gpuRequest())
	if last == nil {
		last = job
	}
	return last, waitErr, nil
}

// createDeployment applies the Deployment, refusing to take over one that
// exists, and with wait_for_rollout waits for it.
func createDeployment(ctx context.Context, client kubernetes.Interface, plan *workloadModel) (waitErr, err error) {
	dep, err := plan.deployment()
	if err == nil {
		_, err = client.AppsV1().Deployments(dep.Namespace).Get(ctx, dep.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			err = apierrors.NewAlreadyExists(appsv1.Resource("deployments"), dep.Name)
		case apierrors.IsNotFound(err):
			dep, err = applyDeployment(ctx, client, dep)
		}
	}
	if err != nil {
		return nil, errors.New(createError("Deployment", plan, err))
	}
	if !plan.WaitForRollout.ValueBool() {
		return nil, nil
	}
	_, waitErr = waitDeploymentRolledOut(ctx, client, dep, plan.gpuRequest())
	return waitErr, nil
}

func createError(kind string, plan *workloadModel, err error) string {
	if apierrors.IsAlreadyExists(err) {
		return fmt.Sprintf("a %s %s already exists. Import it with `terraform import <address> %s`, or choose another metadata.name.", kind, plan.identity(), plan.identity())
	}
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("%v. Does namespace %q exist?", err, plan.namespace())
	}
	return err.Error()
}

// applyDeployment sends dep with server-side apply as this provider's field
// manager, taking over fields another manager set: the configuration wins.
func applyDeployment(ctx context.Context, client kubernetes.Interface, dep *appsv1.Deployment) (*appsv1.Deployment, error) {
	data, err := json.Marshal(dep)
	if err != nil {
		return nil, fmt.Errorf("encoding the Deployment: %w", err)
	}
	config := appsv1ac.Deployment(dep.Name, dep.Namespace)
	if err := json.Unmarshal(data, config); err != nil {
		return nil, fmt.Errorf("encoding the Deployment: %w", err)
	}
	config.Status = nil
	return client.AppsV1().Deployments(dep.Namespace).Apply(ctx, config, metav1.ApplyOptions{FieldManager: kube.FieldManager, Force: true})
}

// readStatus fills the computed status attributes from the cluster. It has
// its own deadline: the wait before it may have used up ctx's. A Job that
// is gone already (ttl_seconds_after_finished = 0) is described by seen,
// the last version the wait saw.
func (r *WorkloadResource) readStatus(ctx context.Context, client kubernetes.Interface, m *workloadModel, seen *batchv1.Job) diag.Diagnostics {
	var diags diag.Diagnostics
	ctx, cancel := diagnosisContext(ctx)
	defer cancel()
	summary := "reading GPU workload (" + m.identity() + ")"
	var err error
	switch m.Kind.ValueString() {
	case workloadKindJob:
		var job *batchv1.Job
		job, err = client.BatchV1().Jobs(m.namespace()).Get(ctx, m.name(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) && seen != nil {
			job, err = seen, nil
		}
		if err == nil {
			var pods []corev1.Pod
			pods, err = listPods(ctx, client, job.Namespace, jobPodSelector(job))
			m.workloadStatusModel = jobStatus(job, pods)
		}
	case workloadKindDeployment:
		var dep *appsv1.Deployment
		dep, err = client.AppsV1().Deployments(m.namespace()).Get(ctx, m.name(), metav1.GetOptions{})
		if err == nil {
			var pods []corev1.Pod
			pods, err = listPods(ctx, client, dep.Namespace, deploymentPodSelector(dep.Name))
			m.workloadStatusModel = deploymentStatus(dep, pods)
		}
	}
	if err != nil {
		diags.AddError(summary, err.Error())
		m.workloadStatusModel = unknownStatusAsNull(m.workloadStatusModel)
	}
	return diags
}

// unknownStatusAsNull replaces unknown computed values, which a state may
// not hold, with nulls.
func unknownStatusAsNull(s workloadStatusModel) workloadStatusModel {
	if s.Status.IsUnknown() {
		s.Status = types.StringNull()
	}
	if s.NodeNames.IsUnknown() {
		s.NodeNames = types.ListNull(types.StringType)
	}
	if s.StartTime.IsUnknown() {
		s.StartTime = types.StringNull()
	}
	if s.CompletionTime.IsUnknown() {
		s.CompletionTime = types.StringNull()
	}
	if s.Succeeded.IsUnknown() {
		s.Succeeded = types.Int64Null()
	}
	if s.Failed.IsUnknown() {
		s.Failed = types.Int64Null()
	}
	return s
}

func (r *WorkloadResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state workloadModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "reading GPU workload (" + state.identity() + ")"
	client := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	switch state.Kind.ValueString() {
	case workloadKindJob:
		job, err := client.BatchV1().Jobs(state.namespace()).Get(ctx, state.name(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if state.Status.ValueString() == "Complete" && state.Job != nil && !state.Job.TTLSecondsAfterFinished.IsNull() {
				return // it completed and Kubernetes deleted it as ttl_seconds_after_finished asked: keep it done
			}
			resp.State.RemoveResource(ctx)
			return
		}
		if err != nil {
			resp.Diagnostics.AddError(summary, err.Error())
			return
		}
		pods, err := listPods(ctx, client, job.Namespace, jobPodSelector(job))
		if err != nil {
			resp.Diagnostics.AddError(summary, err.Error())
			return
		}
		state.refreshFromJob(job)
		state.workloadStatusModel = jobStatus(job, pods)
	case workloadKindDeployment:
		dep, err := client.AppsV1().Deployments(state.namespace()).Get(ctx, state.name(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			resp.State.RemoveResource(ctx)
			return
		}
		if err != nil {
			resp.Diagnostics.AddError(summary, err.Error())
			return
		}
		pods, err := listPods(ctx, client, dep.Namespace, deploymentPodSelector(dep.Name))
		if err != nil {
			resp.Diagnostics.AddError(summary, err.Error())
			return
		}
		state.refreshFromDeployment(dep)
		state.workloadStatusModel = deploymentStatus(dep, pods)
	default:
		resp.Diagnostics.AddError(summary, fmt.Sprintf("unknown kind %q in the state", state.Kind.ValueString()))
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update changes a Deployment in place. A Job only gets here when nothing
// but the wait settings changed: ModifyPlan replaces it for anything else.
func (r *WorkloadResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan workloadModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "updating GPU workload (" + plan.identity() + ")"
	client := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	timeout, diags := plan.Timeouts.Update(ctx, defaultWorkloadWaitTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	plan.ID = types.StringValue(plan.identity())

	if plan.Kind.ValueString() == workloadKindJob {
		// Only wait_for_completion or timeouts changed: nothing to send.
		var state workloadModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		plan.workloadStatusModel = state.workloadStatusModel
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		return
	}
	dep, err := plan.deployment()
	if err == nil {
		err = clearRollingUpdateForRecreate(ctx, client, dep)
	}
	if err == nil {
		dep, err = applyDeployment(ctx, client, dep)
	}
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	var waitErr error
	if plan.WaitForRollout.ValueBool() {
		_, waitErr = waitDeploymentRolledOut(ctx, client, dep, plan.gpuRequest())
	}
	resp.Diagnostics.Append(r.readStatus(ctx, client, &plan, nil)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	if waitErr != nil {
		resp.Diagnostics.AddError(summary, waitErr.Error())
	}
}

// clearRollingUpdateForRecreate removes the rollingUpdate parameters
// Kubernetes defaulted when the strategy becomes Recreate: no field manager
// owns them, so an apply that leaves them out would not remove them, and
// the API rejects them next to Recreate.
func clearRollingUpdateForRecreate(ctx context.Context, client kubernetes.Interface, dep *appsv1.Deployment) error {
	if dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return nil
	}
	live, err := client.AppsV1().Deployments(dep.Namespace).Get(ctx, dep.Name, metav1.GetOptions{})
	if err != nil || live.Spec.Strategy.RollingUpdate == nil {
		return err
	}
	patch := []byte(`{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}`)
	_, err = client.AppsV1().Deployments(dep.Namespace).Patch(ctx, dep.Name, k8stypes.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: kube.FieldManager})
	if err != nil {
		return fmt.Errorf("switching the strategy to Recreate: %w", err)
	}
	return nil
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
	client := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	timeout, diags := state.Timeouts.Delete(ctx, defaultWorkloadDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	foreground := metav1.DeletePropagationForeground
	opts := metav1.DeleteOptions{PropagationPolicy: &foreground}
	ns, name := state.namespace(), state.name()
	var err error
	switch state.Kind.ValueString() {
	case workloadKindJob:
		jobs := client.BatchV1().Jobs(ns)
		if err = jobs.Delete(ctx, name, opts); err == nil {
			err = waitGone[*batchv1.Job](ctx, kube.ListWatchFunctions[*batchv1.JobList]{List: jobs.List, Watch: jobs.Watch}, state.identity(), name)
		}
	case workloadKindDeployment:
		deps := client.AppsV1().Deployments(ns)
		if err = deps.Delete(ctx, name, opts); err == nil {
			err = waitGone[*appsv1.Deployment](ctx, kube.ListWatchFunctions[*appsv1.DeploymentList]{List: deps.List, Watch: deps.Watch}, state.identity(), name)
		}
	}
	if err != nil && !apierrors.IsNotFound(err) {
		if isDeadline(err) {
			err = fmt.Errorf("it was still being deleted after %s (its pods are deleted first; a finalizer or an unreachable node can hold them): %w", timeout, err)
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
	client := r.clients.kubernetesFor(summary, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if kind == "" {
		kind, err = findWorkloadKind(ctx, client, ns, name)
		if err != nil {
			resp.Diagnostics.AddError(summary, err.Error())
			return
		}
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), ns+"/"+name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("kind"), kind)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("metadata").AtName("name"), name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("metadata").AtName("namespace"), ns)...)
}

// findWorkloadKind looks for a Job, then a Deployment, called name.
func findWorkloadKind(ctx context.Context, client kubernetes.Interface, ns, name string) (string, error) {
	_, err := client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return workloadKindJob, nil
	}
	if !apierrors.IsNotFound(err) {
		return "", err
	}
	_, err = client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return workloadKindDeployment, nil
	}
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("there is no Job or Deployment %s/%s", ns, name)
	}
	return "", err
}
