package kube

import "context"

// DeploymentDeleted is what a delete of a resource's objects in one
// namespace left in place.
type DeploymentDeleted struct {
	// Left names objects of the deployment's names that the resource did
	// not create, which it did not delete.
	Left []string
	// NamespaceKept says why a namespace the resource created was kept.
	NamespaceKept *NamespaceKept
}

// deleteCreatedNamespace deletes namespace, as ns says, when owner's
// resource created it (namespaceCreatedBy) and nothing else is in it but
// what ignore excuses; kept says why it stays otherwise.
func (c *Cluster) deleteCreatedNamespace(ctx context.Context, namespace string, owner Ownership, ns NamespaceDeletion, ignore func(kind, name string) bool) (kept *NamespaceKept, err error) {
	if created, err := c.namespaceCreatedBy(ctx, namespace, owner, ns.Created); err != nil || !created {
		return nil, err
	}
	return c.deleteNamespaceIfUnused(ctx, namespace, owner, ignore, ns.EvenIfNotEmpty)
}
