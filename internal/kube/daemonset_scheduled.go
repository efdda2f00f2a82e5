package kube

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes"
)

// waitForDaemonSetScheduled waits until DaemonSet namespace/name has seen
// its current generation and scheduled a pod on every node it wants one
// on, and returns it. On timeout the error, a NotReadyError, counts the
// pods scheduled.
func waitForDaemonSetScheduled(ctx context.Context, client kubernetes.Interface, namespace, name string) (*appsv1.DaemonSet, error) {
	ds, err := WaitForObject(ctx, daemonSetLW(client, namespace), name, func(ds *appsv1.DaemonSet, exists bool) (bool, error) {
		return exists && ds.Status.ObservedGeneration >= ds.Generation &&
			ds.Status.CurrentNumberScheduled == ds.Status.DesiredNumberScheduled, nil
	})
	if err != nil && ds != nil && ctx.Err() != nil {
		return ds, notReady("DaemonSet %s/%s has scheduled %d of %d pods", namespace, name,
			ds.Status.CurrentNumberScheduled, ds.Status.DesiredNumberScheduled)
	}
	return ds, err
}
