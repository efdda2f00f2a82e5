package kube

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DeleteWorkload deletes the workload in the foreground and waits until it
// is gone, which is after its pods are: their GPUs are free when it
// returns. A workload already gone is fine. An object of that name that
// owner does not own (it was replaced out of band) is left alone: the
// error is a *NotOwnedError. The delete is conditional on the UID read, so
// a replacement made in between is never deleted either. ctx bounds the
// wait; on its expiry the error says what holds the workload.
func DeleteWorkload(ctx context.Context, c *Cluster, ref WorkloadRef, owner Ownership) error {
	err := c.runWait(ctx, "workload_deletion", ref.ID(), func(ctx context.Context) error {
		ns, name := ref.Namespace, ref.Name
		switch ref.Kind {
		case WorkloadJob:
			jobs := c.client.BatchV1().Jobs(ns)
			job, err := jobs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if deleted, err := deleteIfOwned(ctx, "Job", job, owner, jobs.Delete); !deleted {
				return err
			}
			return waitGone[*batchv1.Job](ctx, ListWatchFunctions[*batchv1.JobList]{List: jobs.List, Watch: jobs.Watch}, name)
		case WorkloadDeployment:
			deps := c.client.AppsV1().Deployments(ns)
			dep, err := deps.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if deleted, err := deleteIfOwned(ctx, "Deployment", dep, owner, deps.Delete); !deleted {
				return err
			}
			return waitGone[*appsv1.Deployment](ctx, ListWatchFunctions[*appsv1.DeploymentList]{List: deps.List, Watch: deps.Watch}, name)
		}
		return fmt.Errorf("unknown workload kind %q", ref.Kind)
	})
	switch {
	case err == nil || apierrors.IsNotFound(err):
		return nil
	case isDeadline(err):
		return fmt.Errorf("it was still being deleted when the timeout ran out (its pods are deleted first; a finalizer or an unreachable node can hold them): %w", err)
	}
	return err
}

// deleteIfOwned deletes obj in the foreground when owner owns it, on
// condition that it is still the object read (same UID). deleted is false
// when nothing was deleted: obj is not owner's (a *NotOwnedError), it is
// gone already, or it was replaced in between (nil error: the object
// owner had is gone).
func deleteIfOwned(ctx context.Context, kind string, obj metav1.Object, owner Ownership, del func(context.Context, string, metav1.DeleteOptions) error) (deleted bool, err error) {
	if !owner.owns(obj) {
		return false, &NotOwnedError{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Marker: obj.GetAnnotations()[AnnotationOwner]}
	}
	opts := foreground()
	uid := obj.GetUID()
	opts.Preconditions = &metav1.Preconditions{UID: &uid}
	err = del(ctx, obj.GetName(), opts)
	switch {
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("deleting %s %s: %w", kind, qualifiedName(obj.GetNamespace(), obj.GetName()), err)
	}
	return true, nil
}

// waitGone watches until the object called name no longer exists.
func waitGone[T runtime.Object, L runtime.Object](ctx context.Context, lw ListWatchFunctions[L], name string) error {
	_, err := WaitForObject(ctx, lw, name, func(_ T, exists bool) (bool, error) { return !exists, nil })
	return err
}
