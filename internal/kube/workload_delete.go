package kube

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
)

// DeleteWorkload deletes the workload in the foreground and waits until it
// is gone, which is after its pods are: their GPUs are free when it
// returns. A workload already gone is fine. An object of that name that
// owner does not own (it was replaced out of band) is left alone: the
// error is a *NotOwnedError. The delete (deleteObject) is conditional on
// the UID read, so a replacement made in between is never deleted either.
// ctx bounds the wait; on its expiry the error says what holds the
// workload. A DRA workload's ResourceClaimTemplate is deleted after it.
func (c *Cluster) DeleteWorkload(ctx context.Context, ref WorkloadRef, owner Ownership) error {
	err := c.runWait(ctx, "workload_deletion", ref.ID(), func(ctx context.Context) error {
		ns, name := ref.Namespace, ref.Name
		switch ref.Kind {
		case WorkloadJob:
			jobs := c.client.BatchV1().Jobs(ns)
			job := typedObject[batchv1.Job]("Job", ns, name, jobs, (*batchv1ac.JobApplyConfiguration)(nil))
			if deleted, err := deleteObject(ctx, job, owner, foreground()); !deleted {
				return err
			}
			return waitGone[*batchv1.Job](ctx, ListWatchFunctions[*batchv1.JobList]{List: jobs.List, Watch: jobs.Watch}, name)
		case WorkloadDeployment:
			deps := c.client.AppsV1().Deployments(ns)
			dep := typedObject[appsv1.Deployment]("Deployment", ns, name, deps, (*appsv1ac.DeploymentApplyConfiguration)(nil))
			if deleted, err := deleteObject(ctx, dep, owner, foreground()); !deleted {
				return err
			}
			return waitGone[*appsv1.Deployment](ctx, ListWatchFunctions[*appsv1.DeploymentList]{List: deps.List, Watch: deps.Watch}, name)
		}
		return fmt.Errorf("unknown workload kind %q", ref.Kind)
	})
	if (err == nil || apierrors.IsNotFound(err)) && ref.DRA {
		err = c.deleteClaimTemplate(ctx, ref.Namespace, ref.Name, owner)
	}
	switch {
	case err == nil || apierrors.IsNotFound(err):
		return nil
	case isDeadline(err):
		return fmt.Errorf("it was still being deleted when the timeout ran out (its pods are deleted first; a finalizer or an unreachable node can hold them): %w", err)
	}
	return err
}

// waitGone watches until the object called name no longer exists.
func waitGone[T runtime.Object, L runtime.Object](ctx context.Context, lw ListWatchFunctions[L], name string) error {
	_, err := WaitForObject(ctx, lw, name, func(_ T, exists bool) (bool, error) { return !exists, nil })
	return err
}
