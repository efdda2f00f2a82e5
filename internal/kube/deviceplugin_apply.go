package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// EnsureNamespace creates namespace, marked as owner's, unless it exists,
// and says whether it created it (so that destroying can leave a namespace
// it did not make).
func EnsureNamespace(ctx context.Context, c *Cluster, namespace string, owner Ownership) (created bool, err error) {
	client := c.client
	_, err = client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
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
	_, err = client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	return true, nil
}

// DevicePluginCreated is what CreateDevicePlugin left on the cluster.
type DevicePluginCreated struct {
	// NamespaceCreated: the create made the namespace; it is this
	// resource's to delete (when nothing else is in it).
	NamespaceCreated bool
	// Left: objects of the create are on the cluster although it failed
	// (its rollback failed too); the resource must stay in the state so
	// that a destroy or the next apply cleans them up.
	Left bool
}

// CreateDevicePlugin creates the deployment spec describes, its objects
// marked as owner's, in an order that never leaves a pod without its
// config or RuntimeClass. Each object is created atomically: one that
// exists, whoever made it, fails the create with an *ExistsError (never
// taken over), and what this create had made by then is deleted again.
func CreateDevicePlugin(ctx context.Context, c *Cluster, spec DevicePluginSpec, owner Ownership) (result DevicePluginCreated, warnings []string, err error) {
	spec.Owner = owner.ID
	result.NamespaceCreated, err = EnsureNamespace(ctx, c, spec.Namespace, owner)
	if err != nil {
		return result, nil, err
	}
	var made []createdObject
	warnings, err = putDevicePlugin(ctx, c, spec, nil, owner, func(o managedObject, uid types.UID) {
		made = append(made, createdObject{o, uid})
	})
	if err == nil {
		return result, warnings, nil
	}
	var notOwned *NotOwnedError
	if errors.As(err, &notOwned) {
		// Another gpu_device_plugin's object: to a create, it is simply there.
		err = &ExistsError{Kind: notOwned.Kind, Namespace: notOwned.Namespace, Name: notOwned.Name}
	}
	if rollbackErr := rollBack(ctx, made); rollbackErr != nil {
		result.Left = true
		return result, warnings, fmt.Errorf("%w; removing what this create had made failed too, so it is kept in the state for the next apply or destroy: %w", err, rollbackErr)
	}
	if result.NamespaceCreated {
		kept, nsErr := deleteNamespaceIfUnused(ctx, c, spec.Namespace, owner, nil, false)
		if nsErr != nil || kept != nil {
			result.Left = nsErr != nil
			warnings = append(warnings, fmt.Sprintf("namespace %s, made by this create, was left in place: %s", spec.Namespace, keptReason(kept, nsErr)))
		}
		result.NamespaceCreated = false
	}
	return result, warnings, err
}

// ApplyDevicePlugin brings the deployment to spec: objects it lacks are
// created, its own objects applied (what others changed since is taken
// back; the warnings say what), and the components prior (the last
// applied spec) had and spec has not are deleted. An object of one of
// spec's names that owner does not own is never touched: the error says so.
func ApplyDevicePlugin(ctx context.Context, c *Cluster, spec DevicePluginSpec, prior DevicePluginSpec, owner Ownership) (warnings []string, err error) {
	spec.Owner = owner.ID
	warnings, err = putDevicePlugin(ctx, c, spec, &prior, owner, func(managedObject, types.UID) {})
	if err != nil {
		return warnings, err
	}
	left, err := removeDropped(ctx, c.client, spec, prior, owner)
	return append(warnings, left...), err
}

// putDevicePlugin puts every object of spec (putObject), reporting each
// one it created to onCreate.
func putDevicePlugin(ctx context.Context, c *Cluster, spec DevicePluginSpec, prior *DevicePluginSpec, owner Ownership, onCreate func(managedObject, types.UID)) (warnings []string, err error) {
	client := c.client
	objs, err := BuildDevicePluginObjects(spec)
	if err != nil {
		return nil, err
	}
	var objects []managedObject
	if objs.RuntimeClass != nil {
		objects = append(objects, runtimeClassObject(client, spec.RuntimeClass.Name, objs.RuntimeClass))
	}
	objects = append(objects, configMapObject(client, spec.Namespace, spec.ConfigMapName(), objs.ConfigMap))
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
			warnings = append(warnings, fmt.Sprintf("dcgm_exporter.service_monitor is true but the cluster has no ServiceMonitor CRD (monitoring.coreos.com/v1): "+
				"no ServiceMonitor was created. Install the Prometheus Operator, or scrape Service %s/%s (port %d) another way.", spec.Namespace, spec.DCGMName(), spec.DCGM.Port))
		}
	}
	for _, o := range objects {
		uid, warning, err := putObject(ctx, o, runtimeClassOwnership(o, owner))
		if uid != "" {
			onCreate(o, uid)
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

// createdObject is an object a create made, by UID: a rollback deletes
// that object and never a later one of the same name.
type createdObject struct {
	object managedObject
	uid    types.UID
}

// rollBack deletes what a failed create made, newest first, with a
// deadline of its own (the create may have spent ctx's). The deletes are
// in the background: the objects are gone when it returns, their pods
// (there are hardly any yet) follow.
func rollBack(ctx context.Context, made []createdObject) error {
	ctx, cancel := diagnosisContext(ctx)
	defer cancel()
	var errs []error
	for i := len(made) - 1; i >= 0; i-- {
		if _, err := deleteUID(ctx, made[i].object, made[i].uid, metav1.DeleteOptions{}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeDropped deletes the components prior deployed that spec does not,
// when owner owns them; left warns of those it does not.
func removeDropped(ctx context.Context, client kubernetes.Interface, spec, prior DevicePluginSpec, owner Ownership) (left []string, err error) {
	var dropped []managedObject
	keep := map[string]bool{}
	for _, name := range spec.DaemonSetNames() {
		keep[name] = true
	}
	for _, name := range prior.DaemonSetNames() {
		if !keep[name] {
			dropped = append(dropped, daemonSetObject(client, spec.Namespace, name, nil))
		}
	}
	if prior.DCGM != nil && spec.DCGM == nil {
		dropped = append(dropped, serviceObject(client, spec.Namespace, prior.DCGMName(), nil))
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
	resources, err := client.Discovery().ServerResourcesForGroupVersion(serviceMonitorGroupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", serviceMonitorGroupVersion, err)
	}
	for _, r := range resources.APIResources {
		if r.Name == serviceMonitorResource {
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
