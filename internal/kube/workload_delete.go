package kube

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// DeleteWorkload deletes the workload in the foreground and waits until it
// is gone, which is after its pods are: their GPUs are free when it
// returns. A workload already gone is fine. ctx bounds the wait; on its
// expiry the error says what holds the workload.
func DeleteWorkload(ctx context.Context, c *Cluster, ref WorkloadRef) error {
	err := c.runWait(ctx, "workload_deletion", ref.ID(), func(ctx context.Context) error {
		ns, name := ref.Namespace, ref.Name
		switch ref.Kind {
		case WorkloadJob:
			jobs := c.client.BatchV1().Jobs(ns)
			if err := jobs.Delete(ctx, name, foreground()); err != nil {
				return err
			}
			return waitGone[*batchv1.Job](ctx, ListWatchFunctions[*batchv1.JobList]{List: jobs.List, Watch: jobs.Watch}, name)
		case WorkloadDeployment:
			deps := c.client.AppsV1().Deployments(ns)
			if err := deps.Delete(ctx, name, foreground()); err != nil {
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

// waitGone watches until the object called name no longer exists.
func waitGone[T runtime.Object, L runtime.Object](ctx context.Context, lw ListWatchFunctions[L], name string) error {
	_, err := WaitForObject(ctx, lw, name, func(_ T, exists bool) (bool, error) { return !exists, nil })
	return err
}
