package kube

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// CreateWorkload creates the Job or Deployment of spec. It never takes
// over an object that exists (an *ExistsError); an error means nothing was
// created.
func CreateWorkload(ctx context.Context, c *Cluster, spec WorkloadSpec) error {
	var err error
	kind := spec.objectKind()
	done := logCall(ctx, "creating "+kind, spec.ID())
	switch spec.Kind {
	case WorkloadJob:
		job := BuildJob(spec)
		_, err = c.client.BatchV1().Jobs(spec.Namespace).Create(ctx, job, metav1.CreateOptions{FieldManager: FieldManager})
	case WorkloadDeployment:
		_, err = c.client.AppsV1().Deployments(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			err = apierrors.NewAlreadyExists(appsv1.Resource("deployments"), spec.Name)
		case apierrors.IsNotFound(err):
			err = applyDeployment(ctx, c, spec)
		}
	default:
		err = fmt.Errorf("unknown workload kind %q", spec.Kind)
	}
	done(err)
	switch {
	case apierrors.IsAlreadyExists(err):
		return &ExistsError{Kind: kind, Namespace: spec.Namespace, Name: spec.Name}
	case apierrors.IsNotFound(err):
		return fmt.Errorf("creating %s %s: %w. Does namespace %q exist?", kind, spec.ID(), err, spec.Namespace)
	case err != nil:
		return fmt.Errorf("creating %s %s: %w", kind, spec.ID(), err)
	}
	return nil
}

// UpdateWorkload changes the workload in place. A Deployment is applied
// whole. A Job takes only the fields Kubernetes lets change on a Job
// (JobSettingsInPlace); the rest of a Job cannot change, and
// JobNeedsReplacement says when a change needs a new Job.
func UpdateWorkload(ctx context.Context, c *Cluster, spec WorkloadSpec) error {
	done := logCall(ctx, "updating "+spec.objectKind(), spec.ID())
	var err error
	switch spec.Kind {
	case WorkloadJob:
		err = patchJobInPlace(ctx, c, spec)
	case WorkloadDeployment:
		err = clearRollingUpdateForRecreate(ctx, c, spec)
		if err == nil {
			err = applyDeployment(ctx, c, spec)
		}
	default:
		err = fmt.Errorf("unknown workload kind %q", spec.Kind)
	}
	done(err)
	if err != nil {
		return fmt.Errorf("updating %s %s: %w", spec.objectKind(), spec.ID(), err)
	}
	return nil
}

// objectKind is the Kubernetes kind of the spec's object.
func (s WorkloadSpec) objectKind() string {
	if s.Kind == WorkloadDeployment {
		return "Deployment"
	}
	return "Job"
}

// applyDeployment sends the spec's Deployment with server-side apply as
// this provider's field manager, taking over fields another manager set:
// the configuration wins.
func applyDeployment(ctx context.Context, c *Cluster, spec WorkloadSpec) error {
	dep := BuildDeployment(spec)
	data, err := json.Marshal(dep)
	if err != nil {
		return fmt.Errorf("encoding the Deployment: %w", err)
	}
	config := appsv1ac.Deployment(dep.Name, dep.Namespace)
	if err := json.Unmarshal(data, config); err != nil {
		return fmt.Errorf("encoding the Deployment: %w", err)
	}
	config.Status = nil
	_, err = c.client.AppsV1().Deployments(dep.Namespace).Apply(ctx, config, applyOptions)
	return err
}

// clearRollingUpdateForRecreate removes the rollingUpdate parameters
// Kubernetes defaulted when the strategy becomes Recreate: no field manager
// owns them, so an apply that leaves them out would not remove them, and
// the API rejects them next to Recreate.
func clearRollingUpdateForRecreate(ctx context.Context, c *Cluster, spec WorkloadSpec) error {
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
