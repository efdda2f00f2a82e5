package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// NotReadyError is a wait that ended before the deployment was ready; its
// text says what was missing, node by node.
type NotReadyError struct{ Detail string }

func (e *NotReadyError) Error() string { return e.Detail }

// IsNotReady reports whether err is (or wraps) a NotReadyError.
func IsNotReady(err error) bool {
	var notReady *NotReadyError
	return errors.As(err, &notReady)
}

func notReady(format string, args ...any) error {
	return &NotReadyError{Detail: fmt.Sprintf(format, args...)}
}

func daemonSetLW(client kubernetes.Interface, namespace string) ListWatchFunctions[*appsv1.DaemonSetList] {
	ds := client.AppsV1().DaemonSets(namespace)
	return ListWatchFunctions[*appsv1.DaemonSetList]{List: ds.List, Watch: ds.Watch}
}

// RolledOut reports whether every pod ds wants runs its current template
// and is available. With the OnDelete strategy pods change template only
// when someone deletes them, so there it is enough that every pod is
// available.
func RolledOut(ds *appsv1.DaemonSet) bool {
	s := ds.Status
	if s.ObservedGeneration < ds.Generation || s.NumberAvailable != s.DesiredNumberScheduled {
		return false
	}
	return ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType || s.UpdatedNumberScheduled == s.DesiredNumberScheduled
}

// WaitForDaemonSetRollout watches DaemonSet namespace/name until it has
// rolled out (RolledOut). On timeout the error, a NotReadyError,
// counts the pods and says why each one not ready is not.
func (c *Cluster) WaitForDaemonSetRollout(ctx context.Context, namespace, name string) error {
	return c.runWait(ctx, "daemonset_rollout", namespace+"/"+name, func(ctx context.Context) error {
		return waitForDaemonSetRollout(ctx, c.client, namespace, name)
	})
}

func waitForDaemonSetRollout(ctx context.Context, client kubernetes.Interface, namespace, name string) error {
	ds, err := WaitForObject(ctx, daemonSetLW(client, namespace), name, func(ds *appsv1.DaemonSet, exists bool) (bool, error) {
		if !exists {
			return false, nil // not in the cache yet, or recreated: keep watching
		}
		return RolledOut(ds), nil
	})
	if err == nil || ctx.Err() == nil || ds == nil {
		return err
	}
	s := ds.Status
	diagCtx, cancel := diagnosisContext(ctx)
	defer cancel()
	pods := describeNotReadyPods(diagCtx, client, ds)
	return notReady("DaemonSet %s/%s has %d of %d pods on the current template and %d available%s",
		namespace, name, s.UpdatedNumberScheduled, s.DesiredNumberScheduled, s.NumberAvailable, diagnosisList(pods))
}

// WaitForNodesAllocatable waits until every node that runs a pod of the
// plugin's DaemonSet advertises allocatable devices of the plugin's
// resource (see CountsAsGPUs). It first waits for the DaemonSet to have
// scheduled its pods, then follows the nodes with one list and a watch.
// On timeout the error, a NotReadyError, names each node still
// without GPUs and why: its plugin pod's phase, waiting reason and recent
// events, or that the plugin runs and the node still advertises nothing.
func (c *Cluster) WaitForNodesAllocatable(ctx context.Context, spec DevicePluginSpec) error {
	return c.runWait(ctx, "gpus_allocatable", spec.ID(), func(ctx context.Context) error {
		return waitForNodesAllocatable(ctx, c.client, spec)
	})
}

func waitForNodesAllocatable(ctx context.Context, client kubernetes.Interface, spec DevicePluginSpec) error {
	ds, err := waitForDaemonSetScheduled(ctx, client, spec.Namespace, spec.Name)
	if err != nil {
		return err
	}
	nodes, err := pluginNodes(ctx, client, ds)
	if err != nil || len(nodes) == 0 {
		return err
	}

	pending, last, err := waitForNodesWhere(ctx, client, nodes, func(node *corev1.Node) bool {
		return advertisedGPUs(node, spec.Config) > 0
	})
	if err == nil || ctx.Err() == nil {
		return err
	}
	diagCtx, cancel := diagnosisContext(ctx)
	defer cancel()
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(pending)) {
		lines = append(lines, describeNodeWithoutGPUs(diagCtx, client, ds, name, last[name], spec.Config))
	}
	return notReady("%d of %d nodes running the plugin advertise no allocatable %s%s",
		len(pending), len(nodes), spec.Config.AdvertisedGPUResource(), diagnosisList(lines))
}

// waitForNodesWhere follows the nodes with one list and a watch until done
// holds for each of nodes (a node that leaves counts as done). pending are
// those it does not hold for when the wait ends, last the latest of each
// node seen (none for a node that left).
func waitForNodesWhere(ctx context.Context, client kubernetes.Interface, nodes map[string]bool, done func(*corev1.Node) bool) (pending map[string]bool, last map[string]*corev1.Node, err error) {
	pending = maps.Clone(nodes)
	last = map[string]*corev1.Node{}
	nodeClient := client.CoreV1().Nodes()
	lw := ListWatchFunctions[*corev1.NodeList]{List: nodeClient.List, Watch: nodeClient.Watch}
	err = WaitForList(ctx, lw, nil, func(node *corev1.Node, deleted bool) (bool, error) {
		if !nodes[node.Name] {
			return false, nil
		}
		switch {
		case deleted:
			delete(last, node.Name)
			delete(pending, node.Name)
		case done(node):
			last[node.Name] = node
			delete(pending, node.Name)
		default:
			last[node.Name] = node
			pending[node.Name] = true
		}
		return len(pending) == 0, nil
	})
	return pending, last, err
}

// WaitForDaemonSetGone waits until DaemonSet namespace/name no longer exists.
func WaitForDaemonSetGone(ctx context.Context, client kubernetes.Interface, namespace, name string) error {
	_, err := WaitForObject(ctx, daemonSetLW(client, namespace), name, func(_ *appsv1.DaemonSet, exists bool) (bool, error) {
		return !exists, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for DaemonSet %s/%s to be deleted: %w", namespace, name, err)
	}
	return nil
}

// WaitForNamespaceGone waits until the namespace controller has emptied and
// removed namespace.
func WaitForNamespaceGone(ctx context.Context, client kubernetes.Interface, namespace string) error {
	ns := client.CoreV1().Namespaces()
	lw := ListWatchFunctions[*corev1.NamespaceList]{List: ns.List, Watch: ns.Watch}
	last, err := WaitForObject(ctx, lw, namespace, func(_ *corev1.Namespace, exists bool) (bool, error) {
		return !exists, nil
	})
	if err != nil {
		detail := ""
		if last != nil {
			for _, c := range last.Status.Conditions {
				if c.Status == corev1.ConditionTrue {
					detail += "; " + c.Message
				}
			}
		}
		return fmt.Errorf("waiting for namespace %s to be deleted: %w%s", namespace, err, detail)
	}
	return nil
}
