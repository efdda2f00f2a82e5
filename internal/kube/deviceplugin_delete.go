package kube

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NamespaceDeletion says what DeleteDevicePlugin does with the namespace.
type NamespaceDeletion struct {
	// Created: the resource's private state says it created the
	// namespace. A namespace with the owner's marker is deleted without
	// it; one with another resource's marker never is.
	Created bool
	// EvenIfNotEmpty deletes it with whatever else was put in it since.
	EvenIfNotEmpty bool
}

// DevicePluginDeleted is what DeleteDevicePlugin left in place.
type DevicePluginDeleted = DeploymentDeleted

// DeleteDevicePlugin deletes every object of the deployment spec names
// that owner owns, whichever components are enabled (DaemonSets in the
// foreground), and waits until its DaemonSets are gone; then the namespace,
// as ns says, when nothing else is in it. Objects already gone are fine;
// objects of those names that someone else made are left, and said so.
// ctx bounds the wait.
func (c *Cluster) DeleteDevicePlugin(ctx context.Context, spec DevicePluginSpec, owner Ownership, ns NamespaceDeletion) (DevicePluginDeleted, error) {
	var result DevicePluginDeleted
	err := c.runWait(ctx, "device_plugin_deletion", spec.ID(), func(ctx context.Context) error {
		var err error
		result, err = c.deleteDevicePlugin(ctx, spec, owner, ns)
		return err
	})
	return result, err
}

func (c *Cluster) deleteDevicePlugin(ctx context.Context, spec DevicePluginSpec, owner Ownership, ns NamespaceDeletion) (DevicePluginDeleted, error) {
	var result DevicePluginDeleted
	client := c.client
	namespace := spec.Namespace
	objects, err := devicePluginObjectsNamed(client, spec)
	if err != nil {
		return result, err
	}
	var errs []error
	var deletedDaemonSets []string
	for _, o := range objects {
		opts := metav1.DeleteOptions{}
		if o.kind == "DaemonSet" {
			opts = foreground()
		}
		deleted, err := deleteObject(ctx, o, runtimeClassOwnership(o, owner), opts)
		if deleted && o.kind == "DaemonSet" {
			deletedDaemonSets = append(deletedDaemonSets, o.name)
		}
		errs = append(errs, err)
	}
	left, err := notOwned(errs)
	result.Left = left
	if err != nil {
		return result, err
	}
	for _, name := range deletedDaemonSets {
		if err := WaitForDaemonSetGone(ctx, client, namespace, name); err != nil {
			return result, err
		}
	}
	result.NamespaceKept, err = c.deleteCreatedNamespace(ctx, namespace, owner, ns, serviceEndpoints(spec.DCGMName(), spec.HealthAgentName()))
	return result, err
}

// devicePluginObjectsNamed are, for reading and deleting, the objects of
// every name a deployment of spec's name can have, whichever components
// are enabled: its DaemonSets first.
func devicePluginObjectsNamed(client kubernetes.Interface, spec DevicePluginSpec) ([]managedObject, error) {
	namespace := spec.Namespace
	var objects []managedObject
	for _, name := range []string{spec.Name, spec.MPSName(), spec.GFDName(), spec.DCGMName(), spec.HealthAgentName()} {
		objects = append(objects, daemonSetObject(client, namespace, name, nil))
	}
	nfd := spec.nfdObjects(client, false)
	slices.Reverse(nfd) // the pods first
	objects = append(objects, nfd...)
	access := spec.healthAgentAccess(client, nil)
	slices.Reverse(access)
	objects = append(objects, access...)
	objects = append(objects,
		configMapObject(client, namespace, spec.ConfigMapName(), nil),
		serviceObject(client, namespace, spec.DCGMName(), nil))
	installed, err := serviceMonitorCRDInstalled(client)
	if err != nil {
		return nil, err
	}
	if installed {
		objects = append(objects, serviceMonitorObject(client, namespace, spec.DCGMName(), nil))
	}
	if spec.RuntimeClass != nil && spec.RuntimeClass.Create {
		objects = append(objects, runtimeClassObject(client, spec.RuntimeClass.Name, nil))
	}
	return objects, nil
}

// DevicePluginRemnants names the objects of spec's deployment that owner
// owns and that are still on the cluster, as "Kind namespace/name": after
// its plugin DaemonSet was deleted out of band, the rest may remain.
func (c *Cluster) DevicePluginRemnants(ctx context.Context, spec DevicePluginSpec, owner Ownership) ([]string, error) {
	objects, err := devicePluginObjectsNamed(c.client, spec)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, o := range objects {
		live, err := o.get(ctx)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", o, err)
		}
		if runtimeClassOwnership(o, owner).owns(live) && live.GetDeletionTimestamp() == nil {
			left = append(left, o.String())
		}
	}
	return left, nil
}

// namespaceCreatedBy reports whether owner's resource created namespace:
// it carries owner's marker, or it carries none and the resource's private
// state says it created it (as versions before markers recorded it). A
// namespace marked by another resource is never this one's.
func (c *Cluster) namespaceCreatedBy(ctx context.Context, namespace string, owner Ownership, recorded bool) (bool, error) {
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	marker := ns.Annotations[AnnotationOwner]
	if marker == "" {
		return recorded, nil
	}
	return owner.ID != "" && marker == owner.ID, nil
}
