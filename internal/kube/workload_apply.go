package kube

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
)

// ExistsError is a create that found its object already there: made by
// someone else, or by an earlier run whose state was lost.
type ExistsError struct {
	Kind      string // "Job", "Deployment", "DaemonSet"
	Namespace string
	Name      string
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s %s/%s already exists", e.Kind, e.Namespace, e.Name)
}

// CreateWorkload creates the Job or Deployment of spec, marked as owner's.
// The create is atomic: an object of that name, whoever made
// it, is never taken over (an *ExistsError). created says whether the
// object exists afterwards: an error with created false means nothing was
// made; with created true (a create whose answer was lost, and the object
// turned out to be there, or could not be looked for), the caller must
// keep the resource in its state so that nothing is orphaned.
//
// A DRA workload's ResourceClaimTemplate is created first, and deleted
// again when the workload's create made nothing (workload_dra_apply.go).
func (c *Cluster) CreateWorkload(ctx context.Context, spec WorkloadSpec, owner Ownership) (created bool, err error) {
	spec.Owner = owner.ID
	if !spec.Pod.GPU.DRA() {
		return c.createWorkloadObject(ctx, spec)
	}
	template, err := c.createClaimTemplate(ctx, spec)
	if err == nil {
		created, err = c.createWorkloadObject(ctx, spec)
		if created {
			return true, err
		}
	}
	if template != nil {
		if rbErr := template.rollBack(context.WithoutCancel(ctx), owner); rbErr != nil {
			return true, fmt.Errorf("%w; deleting the ResourceClaimTemplate it made failed too (it is kept in the state): %w", err, rbErr)
		}
	}
	return false, err
}

// createWorkloadObject creates the Job or Deployment of spec; see
// CreateWorkload.
func (c *Cluster) createWorkloadObject(ctx context.Context, spec WorkloadSpec) (created bool, err error) {
	kind := spec.objectKind()
	done := logCall(ctx, "creating "+kind, spec.ID())
	switch spec.Kind {
	case WorkloadJob:
		_, err = c.client.BatchV1().Jobs(spec.Namespace).Create(ctx, BuildJob(spec), metav1.CreateOptions{FieldManager: FieldManager})
	case WorkloadDeployment:
		deps := c.client.AppsV1().Deployments(spec.Namespace)
		var dep *appsv1.Deployment
		if dep, err = deps.Create(ctx, BuildDeployment(spec), metav1.CreateOptions{FieldManager: FieldManager}); err == nil {
			// Later updates are server-side applies (see created_fields.go).
			if err := ownCreatedFieldsAsApplier(ctx, dep,
				func(ctx context.Context) (runtime.Object, error) {
					return deps.Get(ctx, spec.Name, metav1.GetOptions{})
				},
				func(ctx context.Context, patch []byte) error {
					_, err := deps.Patch(ctx, spec.Name, k8stypes.JSONPatchType, patch, metav1.PatchOptions{})
					return err
				}); err != nil {
				done(err)
				return true, fmt.Errorf("creating Deployment %s: %w", spec.ID(), err)
			}
		}
	default:
		err = fmt.Errorf("unknown workload kind %q", spec.Kind)
	}
	done(err)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsAlreadyExists(err):
		return false, &ExistsError{Kind: kind, Namespace: spec.Namespace, Name: spec.Name}
	case apierrors.IsNotFound(err):
		return false, fmt.Errorf("creating %s %s: %w. Does namespace %q exist?", kind, spec.ID(), err, spec.Namespace)
	case !mayHaveCreated(err):
		return false, fmt.Errorf("creating %s %s: %w", kind, spec.ID(), err)
	}
	created = c.workloadCreatedAfterAll(ctx, spec)
	if created {
		return true, fmt.Errorf("creating %s %s: %w (the %s may have been created all the same: it is kept in the state, and the next plan reads whether it exists)", kind, spec.ID(), err, kind)
	}
	return false, fmt.Errorf("creating %s %s: %w", kind, spec.ID(), err)
}

// workloadCreatedAfterAll is createdAfterAll for spec's Job or Deployment.
func (c *Cluster) workloadCreatedAfterAll(ctx context.Context, spec WorkloadSpec) bool {
	return createdAfterAll(ctx, spec.Owner, func(ctx context.Context) (metav1.Object, error) {
		if spec.Kind == WorkloadJob {
			return c.client.BatchV1().Jobs(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
		}
		return c.client.AppsV1().Deployments(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
	})
}

// UpdateWorkload changes the workload in place, marked as owner's. A Deployment is applied
// whole; fields that someone else changed since are taken back, and the
// warning says which. A Job takes only the fields Kubernetes lets change on
// a Job (JobSettingsInPlace); the rest of a Job cannot change, and
// JobNeedsReplacement says when a change needs a new Job.
func (c *Cluster) UpdateWorkload(ctx context.Context, spec WorkloadSpec, owner Ownership) (warning string, err error) {
	spec.Owner = owner.ID
	done := logCall(ctx, "updating "+spec.objectKind(), spec.ID())
	switch spec.Kind {
	case WorkloadJob:
		err = c.patchJobInPlace(ctx, spec)
	case WorkloadDeployment:
		err = c.clearRollingUpdateForRecreate(ctx, spec)
		if err == nil {
			warning, err = c.applyDeployment(ctx, spec)
		}
	default:
		err = fmt.Errorf("unknown workload kind %q", spec.Kind)
	}
	done(err)
	if err != nil {
		return "", fmt.Errorf("updating %s %s: %w", spec.objectKind(), spec.ID(), err)
	}
	return warning, nil
}

// objectKind is the Kubernetes kind of the spec's object.
func (s WorkloadSpec) objectKind() string {
	if s.Kind == WorkloadDeployment {
		return "Deployment"
	}
	return "Job"
}

// applyDeployment sends the spec's Deployment with server-side apply as
// this provider's field manager. The configuration wins over fields
// another manager set since, and the warning names them.
func (c *Cluster) applyDeployment(ctx context.Context, spec WorkloadSpec) (warning string, err error) {
	dep := BuildDeployment(spec)
	data, err := json.Marshal(dep)
	if err != nil {
		return "", fmt.Errorf("encoding the Deployment: %w", err)
	}
	config := appsv1ac.Deployment(dep.Name, dep.Namespace)
	if err := json.Unmarshal(data, config); err != nil {
		return "", fmt.Errorf("encoding the Deployment: %w", err)
	}
	config.Status = nil
	return applyTakingOver(ctx, "Deployment "+spec.ID(), func(opts metav1.ApplyOptions) error {
		_, err := c.client.AppsV1().Deployments(dep.Namespace).Apply(ctx, config, opts)
		return err
	})
}

// clearRollingUpdateForRecreate removes the rollingUpdate parameters
// Kubernetes defaulted when the strategy becomes Recreate: no field manager
// owns them, so an apply that leaves them out would not remove them, and
// the API rejects them next to Recreate.
func (c *Cluster) clearRollingUpdateForRecreate(ctx context.Context, spec WorkloadSpec) error {
	if spec.Deployment.Strategy != appsv1.RecreateDeploymentStrategyType {
		return nil
	}
	deps := c.client.AppsV1().Deployments(spec.Namespace)
	live, err := deps.Get(ctx, spec.Name, metav1.GetOptions{})
	if err != nil || live.Spec.Strategy.RollingUpdate == nil {
		return err
	}
	patch := []byte(`{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}`)
	_, err = deps.Patch(ctx, spec.Name, k8stypes.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("switching the strategy to Recreate: %w", err)
	}
	return nil
}
