package kube

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DeleteDevicePlugin deletes every object of the deployment spec names,
// whichever components are enabled, with foreground propagation, and
// waits until its DaemonSets are gone (and the namespace, when
// deleteNamespace); ctx bounds the wait. Objects already gone are fine.
func DeleteDevicePlugin(ctx context.Context, c *Cluster, spec DevicePluginSpec, deleteNamespace bool) error {
	return c.runWait(ctx, "device_plugin_deletion", spec.ID(), func(ctx context.Context) error {
		return deleteDevicePlugin(ctx, c.client, spec, deleteNamespace)
	})
}

func deleteDevicePlugin(ctx context.Context, client kubernetes.Interface, spec DevicePluginSpec, deleteNamespace bool) error {
	ns := spec.Namespace
	daemonSets := []string{spec.Name, spec.MPSName(), spec.GFDName(), spec.DCGMName()}
	var errs []error
	for _, name := range daemonSets {
		errs = append(errs, deleteIgnoringNotFound("DaemonSet", ns, name, client.AppsV1().DaemonSets(ns).Delete(ctx, name, foreground())))
	}
	errs = append(errs,
		deleteIgnoringNotFound("ConfigMap", ns, spec.ConfigMapName(), client.CoreV1().ConfigMaps(ns).Delete(ctx, spec.ConfigMapName(), metav1.DeleteOptions{})),
		deleteIgnoringNotFound("Service", ns, spec.DCGMName(), client.CoreV1().Services(ns).Delete(ctx, spec.DCGMName(), metav1.DeleteOptions{})),
		deleteServiceMonitor(ctx, client, ns, spec.DCGMName()))
	if spec.RuntimeClass != nil && spec.RuntimeClass.Create {
		errs = append(errs, deleteOwnedRuntimeClass(ctx, client, spec.RuntimeClass.Name, spec.ID()))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, name := range daemonSets {
		if err := WaitForDaemonSetGone(ctx, client, ns, name); err != nil {
			return err
		}
	}
	if !deleteNamespace {
		return nil
	}
	err := client.CoreV1().Namespaces().Delete(ctx, ns, foreground())
	if err := deleteIgnoringNotFound("Namespace", "", ns, err); err != nil {
		return err
	}
	return WaitForNamespaceGone(ctx, client, ns)
}
