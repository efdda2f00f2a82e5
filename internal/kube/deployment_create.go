package kube

import (
	"context"
	"errors"
	"fmt"
)

// DeploymentCreated is what a create of a resource's objects in one
// namespace (gpu_device_plugin's, gpu_dra_driver's) left on the cluster;
// the zero value is nothing.
type DeploymentCreated struct {
	// Exists: objects of this create are on the cluster (or may be). It is
	// true after a success, and after a failure whose rollback failed too:
	// the resource must then stay in the state, tainted, so that a destroy
	// or the next apply removes them.
	Exists bool
	// NamespaceCreated: the create made the namespace; it is this
	// resource's to delete (when nothing else is in it).
	NamespaceCreated bool
}

// createDeployment makes namespace exist, then has put create the
// objects, each reported to onCreate when made (or maybe made). A create
// that fails deletes what it had made by then (rollBack); what it cannot
// delete makes the result Exists. Another resource's object of one of the
// names is, to a create, simply there: an *ExistsError.
func (c *Cluster) createDeployment(ctx context.Context, namespace string, owner Ownership,
	put func(onCreate func(createdObject)) (warnings []string, err error)) (result DeploymentCreated, warnings []string, err error) {
	result.NamespaceCreated, err = c.EnsureNamespace(ctx, namespace, owner)
	var made []createdObject
	if err == nil {
		warnings, err = put(func(o createdObject) { made = append(made, o) })
	}
	if err == nil {
		result.Exists = true
		return result, warnings, nil
	}
	var notOwned *NotOwnedError
	if errors.As(err, &notOwned) {
		err = &ExistsError{Kind: notOwned.Kind, Namespace: notOwned.Namespace, Name: notOwned.Name}
	}
	kept, rollbackErr := c.rollBack(ctx, made, namespace, result.NamespaceCreated, owner)
	if kept != nil {
		warnings = append(warnings, fmt.Sprintf("namespace %s, made by this create, was left in place: %s", namespace, kept))
	}
	if rollbackErr != nil {
		result.Exists = true
		return result, warnings, fmt.Errorf("%w; removing what this create had made failed too, so it is kept in the state for the next apply or destroy: %w", err, rollbackErr)
	}
	return DeploymentCreated{}, warnings, err
}
