package kube

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeleteDRADriver deletes every object of the deployment spec names that
// owner owns, every DeviceClass of the chart included whichever are
// enabled (the DaemonSet in the foreground), and waits until the DaemonSet
// is gone, so that no kubelet plugin pod outlives its RBAC; then the
// namespace, as ns says, when nothing else is in it. The plugin's
// ResourceSlices go with its pods (the kubelet removes a plugin's slices
// when it unregisters). Objects already gone are fine; objects of those
// names that someone else made are left, and said so. ctx bounds the wait.
func (c *Cluster) DeleteDRADriver(ctx context.Context, spec DRADriverSpec, owner Ownership, ns NamespaceDeletion) (DeploymentDeleted, error) {
	var result DeploymentDeleted
	err := c.runWait(ctx, "dra_driver_deletion", spec.ID(), func(ctx context.Context) error {
		var err error
		result, err = c.deleteDRADriver(ctx, spec, owner, ns)
		return err
	})
	return result, err
}

func (c *Cluster) deleteDRADriver(ctx context.Context, spec DRADriverSpec, owner Ownership, ns NamespaceDeletion) (DeploymentDeleted, error) {
	var result DeploymentDeleted
	objects := draDriverManagedObjects(c.client, spec, nil, true)
	// The DaemonSet first: its pods stop before their rights go.
	slices.SortStableFunc(objects, func(a, b managedObject) int {
		return cmp.Compare(boolRank(a.kind != "DaemonSet"), boolRank(b.kind != "DaemonSet"))
	})
	var errs []error
	for _, o := range objects {
		opts := metav1.DeleteOptions{}
		if o.kind == "DaemonSet" {
			opts = foreground()
		}
		deleted, err := deleteObject(ctx, o, owner, opts)
		if deleted && o.kind == "DaemonSet" {
			if err := WaitForDaemonSetGone(ctx, c.client, spec.Namespace, spec.DaemonSetName()); err != nil {
				return result, err
			}
		}
		errs = append(errs, err)
	}
	left, err := notOwned(errs)
	result.Left = left
	if err != nil {
		return result, err
	}
	result.NamespaceKept, err = c.deleteCreatedNamespace(ctx, spec.Namespace, owner, ns, nil)
	return result, err
}

// DRADriverRemnants names the objects of spec's deployment that owner owns
// and that are still on the cluster, as "Kind namespace/name": after its
// DaemonSet was deleted out of band, the rest may remain.
func (c *Cluster) DRADriverRemnants(ctx context.Context, spec DRADriverSpec, owner Ownership) ([]string, error) {
	var left []string
	for _, o := range draDriverManagedObjects(c.client, spec, nil, true) {
		live, err := o.get(ctx)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", o, err)
		}
		if owner.owns(live) && live.GetDeletionTimestamp() == nil {
			left = append(left, o.String())
		}
	}
	return left, nil
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
