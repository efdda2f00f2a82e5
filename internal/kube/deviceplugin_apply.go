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

// applyOptions: server-side apply as this provider, taking over fields
// another manager (kubectl edit, a Helm release) set.
var applyOptions = metav1.ApplyOptions{FieldManager: FieldManager, Force: true}

// EnsureNamespace creates namespace unless it exists, and says whether it
// created it (so that destroying can leave a namespace it did not make).
func EnsureNamespace(ctx context.Context, c *Cluster, namespace string) (created bool, err error) {
	client := c.client
	_, err = client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err == nil {
		return false, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{LabelManagedBy: FieldManager}}}
	_, err = client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	return true, nil
}

// ApplyDevicePlugin server-side applies every object of spec, in an order
// that never leaves a pod without its config or RuntimeClass, then removes
// what prior (the last applied spec, nil on create) had and spec has not.
// Warnings are things the user should know that did not stop the apply.
func ApplyDevicePlugin(ctx context.Context, c *Cluster, spec DevicePluginSpec, prior *DevicePluginSpec) (warnings []string, err error) {
	client := c.client
	objs, err := BuildDevicePluginObjects(spec)
	if err != nil {
		return nil, err
	}
	if objs.RuntimeClass != nil {
		if _, err := client.NodeV1().RuntimeClasses().Apply(ctx, objs.RuntimeClass, applyOptions); err != nil {
			return nil, fmt.Errorf("applying RuntimeClass %s: %w", spec.RuntimeClass.Name, err)
		}
	}
	if _, err := client.CoreV1().ConfigMaps(spec.Namespace).Apply(ctx, objs.ConfigMap, applyOptions); err != nil {
		return nil, fmt.Errorf("applying ConfigMap %s/%s: %w", spec.Namespace, spec.ConfigMapName(), err)
	}
	for _, ds := range objs.DaemonSets {
		if _, err := client.AppsV1().DaemonSets(spec.Namespace).Apply(ctx, ds, applyOptions); err != nil {
			return nil, fmt.Errorf("applying DaemonSet %s/%s: %w", spec.Namespace, *ds.Name, err)
		}
	}
	if objs.Service != nil {
		if _, err := client.CoreV1().Services(spec.Namespace).Apply(ctx, objs.Service, applyOptions); err != nil {
			return nil, fmt.Errorf("applying Service %s/%s: %w", spec.Namespace, spec.DCGMName(), err)
		}
	}
	if spec.DCGM != nil && spec.DCGM.ServiceMonitor {
		applied, err := applyServiceMonitor(ctx, client, spec)
		if err != nil {
			return nil, err
		}
		if !applied {
			warnings = append(warnings, fmt.Sprintf("dcgm_exporter.service_monitor is true but the cluster has no ServiceMonitor CRD (monitoring.coreos.com/v1): "+
				"no ServiceMonitor was created. Install the Prometheus Operator, or scrape Service %s/%s (port %d) another way.", spec.Namespace, spec.DCGMName(), spec.DCGM.Port))
		}
	}
	return warnings, removeDropped(ctx, client, spec, prior)
}

// removeDropped deletes the components prior deployed that spec does not.
func removeDropped(ctx context.Context, client kubernetes.Interface, spec DevicePluginSpec, prior *DevicePluginSpec) error {
	if prior == nil {
		return nil
	}
	var errs []error
	keep := map[string]bool{}
	for _, name := range spec.DaemonSetNames() {
		keep[name] = true
	}
	for _, name := range prior.DaemonSetNames() {
		if !keep[name] {
			errs = append(errs, deleteIgnoringNotFound("DaemonSet", spec.Namespace, name,
				client.AppsV1().DaemonSets(spec.Namespace).Delete(ctx, name, foreground())))
		}
	}
	if prior.DCGM != nil && spec.DCGM == nil {
		errs = append(errs, deleteIgnoringNotFound("Service", spec.Namespace, prior.DCGMName(),
			client.CoreV1().Services(spec.Namespace).Delete(ctx, prior.DCGMName(), metav1.DeleteOptions{})))
	}
	if prior.DCGM != nil && prior.DCGM.ServiceMonitor && (spec.DCGM == nil || !spec.DCGM.ServiceMonitor) {
		errs = append(errs, deleteServiceMonitor(ctx, client, spec.Namespace, prior.DCGMName()))
	}
	if rc := prior.RuntimeClass; rc != nil && rc.Create && (spec.RuntimeClass == nil || !spec.RuntimeClass.Create || spec.RuntimeClass.Name != rc.Name) {
		errs = append(errs, deleteOwnedRuntimeClass(ctx, client, rc.Name, spec.ID()))
	}
	return errors.Join(errs...)
}

func foreground() metav1.DeleteOptions {
	policy := metav1.DeletePropagationForeground
	return metav1.DeleteOptions{PropagationPolicy: &policy}
}

func deleteIgnoringNotFound(kind, namespace, name string, err error) error {
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("deleting %s %s/%s: %w", kind, namespace, name, err)
}

// deleteOwnedRuntimeClass deletes a RuntimeClass only if the device plugin
// id created it: another one of the same name is left alone.
func deleteOwnedRuntimeClass(ctx context.Context, client kubernetes.Interface, name, id string) error {
	rc, err := client.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading RuntimeClass %s: %w", name, err)
	}
	if rc.Annotations[AnnotationOwner] != id {
		return nil
	}
	uid := rc.UID
	err = client.NodeV1().RuntimeClasses().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("deleting RuntimeClass %s: %w", name, err)
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

// applyServiceMonitor applies a ServiceMonitor for the DCGM exporter's
// Service; applied is false when the CRD is not installed.
func applyServiceMonitor(ctx context.Context, client kubernetes.Interface, spec DevicePluginSpec) (applied bool, err error) {
	installed, err := serviceMonitorCRDInstalled(client)
	if err != nil || !installed {
		return false, err
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": serviceMonitorGroupVersion,
		"kind":       "ServiceMonitor",
		"metadata":   map[string]any{"name": spec.DCGMName(), "namespace": spec.Namespace, "labels": spec.labels(ComponentDCGM)},
		"spec": map[string]any{
			"selector":  map[string]any{"matchLabels": spec.selectorLabels(ComponentDCGM)},
			"endpoints": []any{map[string]any{"port": dcgmMetricsPort, "path": "/metrics"}},
		},
	})
	if err != nil {
		return false, err
	}
	err = client.Discovery().RESTClient().Patch(types.ApplyPatchType).
		AbsPath(serviceMonitorPath(spec.Namespace, spec.DCGMName())).
		Param("fieldManager", FieldManager).Param("force", "true").
		Body(body).Do(ctx).Error()
	if err != nil {
		return false, fmt.Errorf("applying ServiceMonitor %s/%s: %w", spec.Namespace, spec.DCGMName(), err)
	}
	return true, nil
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

func deleteServiceMonitor(ctx context.Context, client kubernetes.Interface, namespace, name string) error {
	installed, err := serviceMonitorCRDInstalled(client)
	if err != nil || !installed {
		return err
	}
	err = client.Discovery().RESTClient().Delete().AbsPath(serviceMonitorPath(namespace, name)).Do(ctx).Error()
	return deleteIgnoringNotFound("ServiceMonitor", namespace, name, err)
}
