package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// EnsureNamespace creates namespace, marked as owner's, unless it exists,
// and says whether it created it (so that destroying can leave a namespace
// it did not make). created is true with an error when the create's answer
// was lost and the namespace is there with owner's marker, or could not be
// looked for.
func (c *Cluster) EnsureNamespace(ctx context.Context, namespace string, owner Ownership) (created bool, err error) {
	namespaces := c.client.CoreV1().Namespaces()
	_, err = namespaces.Get(ctx, namespace, metav1.GetOptions{})
	if err == nil {
		return false, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        namespace,
		Labels:      map[string]string{LabelManagedBy: FieldManager},
		Annotations: withOwner(nil, owner.ID),
	}}
	_, err = namespaces.Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsAlreadyExists(err):
		return false, nil
	case mayHaveCreated(err):
		created = createdAfterAll(ctx, owner.ID, func(ctx context.Context) (metav1.Object, error) {
			return namespaces.Get(ctx, namespace, metav1.GetOptions{})
		})
		return created, fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	return false, fmt.Errorf("creating namespace %s: %w", namespace, err)
}

// DevicePluginCreated is what CreateDevicePlugin left on the cluster.
type DevicePluginCreated = DeploymentCreated

// CreateDevicePlugin creates the deployment spec describes, its objects
// marked as owner's, in an order that never leaves a pod without its
// config or RuntimeClass. Each object is created atomically: one that
// exists, whoever made it, fails the create with an *ExistsError (never
// taken over). A create that fails deletes what it had made by then (an
// object whose create's answer was lost included, found by owner's
// marker); what it cannot delete makes the result Exists.
func (c *Cluster) CreateDevicePlugin(ctx context.Context, spec DevicePluginSpec, owner Ownership) (result DevicePluginCreated, warnings []string, err error) {
	spec.Owner = owner.ID
	return c.createDeployment(ctx, spec.Namespace, owner, func(onCreate func(createdObject)) ([]string, error) {
		return c.putDevicePlugin(ctx, spec, nil, owner, onCreate)
	})
}

// UpdateDevicePlugin brings the deployment to spec: objects it lacks are
// created, its own objects applied (what others changed since is taken
// back; the warnings say what), and the components prior (the last
// applied spec) had and spec has not are deleted. An object of one of
// spec's names that owner does not own is never touched: the error says so.
func (c *Cluster) UpdateDevicePlugin(ctx context.Context, spec DevicePluginSpec, prior DevicePluginSpec, owner Ownership) (warnings []string, err error) {
	spec.Owner = owner.ID
	warnings, err = c.putDevicePlugin(ctx, spec, &prior, owner, func(createdObject) {})
	if err != nil {
		return warnings, err
	}
	left, err := removeDropped(ctx, c.client, spec, prior, owner)
	return append(warnings, left...), err
}

// putDevicePlugin puts every object of spec (putObject), reporting each
// one it created, or may have, to onCreate.
func (c *Cluster) putDevicePlugin(ctx context.Context, spec DevicePluginSpec, prior *DevicePluginSpec, owner Ownership, onCreate func(createdObject)) (warnings []string, err error) {
	client := c.client
	objs, err := BuildDevicePluginObjects(spec)
	if err != nil {
		return nil, err
	}
	var objects []managedObject
	if spec.DeploysNFD() {
		if err := spec.ensureNFDCRDs(ctx, client); err != nil {
			return nil, err
		}
		objects = append(objects, spec.nfdObjects(client, true)...)
	}
	if objs.RuntimeClass != nil {
		objects = append(objects, runtimeClassObject(client, spec.RuntimeClass.Name, objs.RuntimeClass))
	}
	objects = append(objects, configMapObject(client, spec.Namespace, spec.ConfigMapName(), objs.ConfigMap))
	if objs.HealthAgent != nil {
		objects = append(objects, spec.healthAgentAccess(client, objs.HealthAgent)...)
	}
	for _, ds := range objs.DaemonSets {
		objects = append(objects, daemonSetObject(client, spec.Namespace, *ds.Name, ds))
	}
	if objs.Service != nil {
		objects = append(objects, serviceObject(client, spec.Namespace, spec.DCGMName(), objs.Service))
	}
	if spec.DCGM != nil && spec.DCGM.ServiceMonitor {
		installed, err := serviceMonitorCRDInstalled(client)
		switch {
		case err != nil:
			return nil, err
		case installed:
			body, err := serviceMonitorBody(spec)
			if err != nil {
				return nil, err
			}
			objects = append(objects, serviceMonitorObject(client, spec.Namespace, spec.DCGMName(), body))
		default:
			warnings = append(warnings, fmt.Sprintf("A ServiceMonitor for the DCGM exporter was asked for, but the cluster has no ServiceMonitor CRD (monitoring.coreos.com/v1): "+
				"none was created. Install the Prometheus Operator, or scrape Service %s/%s (port %d) another way.", spec.Namespace, spec.DCGMName(), spec.DCGM.Port))
		}
	}
	for _, o := range objects {
		made, warning, err := putObject(ctx, o, runtimeClassOwnership(o, owner))
		if made != nil {
			onCreate(*made)
		}
		if warning != "" {
			warnings = append(warnings, warning)
		}
		if err != nil {
			return warnings, err
		}
	}
	return warnings, nil
}

// rollBack deletes what a failed create made, newest first, then the
// namespace when the create made it and nothing else is in it (kept says
// why it stays otherwise), with a deadline of its own (the create may
// have spent ctx's). An object whose create's answer was lost is deleted
// when it exists with owner's marker. The deletes are in the background:
// the objects are gone when it returns, their pods (there are hardly any
// yet) follow.
func (c *Cluster) rollBack(ctx context.Context, made []createdObject, namespace string, namespaceCreated bool, owner Ownership) (kept *NamespaceKept, err error) {
	ctx, cancel := diagnosisContext(ctx)
	defer cancel()
	marked := owner
	marked.ClaimsUnmarked = false
	var errs []error
	for i := len(made) - 1; i >= 0; i-- {
		var err error
		if o := made[i]; o.uid != "" {
			_, err = deleteUID(ctx, o.object, o.uid, metav1.DeleteOptions{})
		} else if _, err = deleteObject(ctx, o.object, marked, metav1.DeleteOptions{}); errors.As(err, new(*NotOwnedError)) {
			err = nil // not this create's: it did not make it after all
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil || !namespaceCreated {
		return nil, err
	}
	return c.deleteNamespaceIfUnused(ctx, namespace, owner, nil, false)
}

// removeDropped deletes the components prior deployed that spec does not,
// when owner owns them; left warns of those it does not.
func removeDropped(ctx context.Context, client kubernetes.Interface, spec, prior DevicePluginSpec, owner Ownership) (left []string, err error) {
	var dropped []managedObject
	keep := map[string]bool{}
	for _, name := range spec.DaemonSetNames() {
		keep[name] = true
	}
	if prior.DeploysNFD() && !spec.DeploysNFD() {
		nfd := prior.nfdObjects(client, false)
		slices.Reverse(nfd) // the pods before what they need
		dropped = append(dropped, nfd...)
		keep[prior.NFDWorkerName()] = true
	}
	for _, name := range prior.DaemonSetNames() {
		if !keep[name] {
			dropped = append(dropped, daemonSetObject(client, spec.Namespace, name, nil))
		}
	}
	if prior.DCGM != nil && spec.DCGM == nil {
		dropped = append(dropped, serviceObject(client, spec.Namespace, prior.DCGMName(), nil))
	}
	if prior.HealthAgent != nil && spec.HealthAgent == nil {
		access := prior.healthAgentAccess(client, nil)
		slices.Reverse(access) // the Service first, the ServiceAccount last
		dropped = append(dropped, access...)
	}
	if prior.DCGM != nil && prior.DCGM.ServiceMonitor && (spec.DCGM == nil || !spec.DCGM.ServiceMonitor) {
		if installed, err := serviceMonitorCRDInstalled(client); err != nil {
			return nil, err
		} else if installed {
			dropped = append(dropped, serviceMonitorObject(client, spec.Namespace, prior.DCGMName(), nil))
		}
	}
	if rc := prior.RuntimeClass; rc != nil && rc.Create && (spec.RuntimeClass == nil || !spec.RuntimeClass.Create || spec.RuntimeClass.Name != rc.Name) {
		dropped = append(dropped, runtimeClassObject(client, rc.Name, nil))
	}
	var errs []error
	for _, o := range dropped {
		opts := metav1.DeleteOptions{}
		if o.kind == "DaemonSet" {
			opts = foreground()
		}
		if _, err := deleteObject(ctx, o, runtimeClassOwnership(o, owner), opts); err != nil {
			errs = append(errs, err)
		}
	}
	return notOwned(errs)
}

// runtimeClassOwnership is owner, except that a RuntimeClass is only ever
// claimed by its marker: a cluster-wide "nvidia" RuntimeClass that the GPU
// operator or a node image made is shared, and an import does not make it
// this resource's.
func runtimeClassOwnership(o managedObject, owner Ownership) Ownership {
	if o.kind == "RuntimeClass" {
		owner.ClaimsUnmarked = false
	}
	return owner
}

func foreground() metav1.DeleteOptions {
	policy := metav1.DeletePropagationForeground
	return metav1.DeleteOptions{PropagationPolicy: &policy}
}

// The Prometheus Operator's ServiceMonitor, written through the raw REST
// client: the provider carries no client for that API group.
const (
	serviceMonitorGroupVersion = "monitoring.coreos.com/v1"
	serviceMonitorResource     = "servicemonitors"
)

// serviceMonitorCRDInstalled asks discovery whether the cluster serves
// ServiceMonitors.
func serviceMonitorCRDInstalled(client kubernetes.Interface) (bool, error) {
	return apiResourceServed(client, serviceMonitorGroupVersion, serviceMonitorResource)
}

// apiResourceServed asks discovery whether the cluster serves resource
// (plural) in groupVersion: a CRD's API exists only once it is installed.
func apiResourceServed(client kubernetes.Interface, groupVersion, resource string) (bool, error) {
	resources, err := client.Discovery().ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", groupVersion, err)
	}
	for _, r := range resources.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}

func serviceMonitorPath(namespace, name string) string {
	return "/apis/" + serviceMonitorGroupVersion + "/namespaces/" + namespace + "/" + serviceMonitorResource + "/" + name
}

// serviceMonitorBody is the JSON of the ServiceMonitor for the DCGM
// exporter's Service.
func serviceMonitorBody(spec DevicePluginSpec) ([]byte, error) {
	metadata := map[string]any{"name": spec.DCGMName(), "namespace": spec.Namespace, "labels": spec.labels(ComponentDCGM)}
	if annotations := spec.ownerAnnotations(); len(annotations) > 0 {
		metadata["annotations"] = annotations
	}
	return json.Marshal(map[string]any{
		"apiVersion": serviceMonitorGroupVersion,
		"kind":       "ServiceMonitor",
		"metadata":   metadata,
		"spec": map[string]any{
			"selector":  map[string]any{"matchLabels": spec.selectorLabels(ComponentDCGM)},
			"endpoints": []any{map[string]any{"port": dcgmMetricsPort, "path": "/metrics"}},
		},
	})
}

// serviceMonitorExists reports whether the ServiceMonitor exists; known is
// false when the cluster has no ServiceMonitor CRD.
func serviceMonitorExists(ctx context.Context, client kubernetes.Interface, namespace, name string) (exists, known bool, err error) {
	installed, err := serviceMonitorCRDInstalled(client)
	if err != nil || !installed {
		return false, false, err
	}
	err = client.Discovery().RESTClient().Get().AbsPath(serviceMonitorPath(namespace, name)).Do(ctx).Error()
	if apierrors.IsNotFound(err) {
		return false, true, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("reading ServiceMonitor %s/%s: %w", namespace, name, err)
	}
	return true, true, nil
}
