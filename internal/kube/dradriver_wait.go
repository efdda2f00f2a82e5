package kube

import (
	"context"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// WaitForResourceSlices waits until every node that runs a pod of the
// kubelet plugin's DaemonSet has published its resource pool (see
// dradriver_slices.go). It first waits for the DaemonSet to have scheduled
// its pods, then follows the driver's ResourceSlices with one list and a
// watch. On timeout the error, a NotReadyError, names each node that has
// not published and why: its plugin pod's phase, pending reason and recent
// events, or that the plugin runs and published nothing.
func (c *Cluster) WaitForResourceSlices(ctx context.Context, spec DRADriverSpec) error {
	return c.runWait(ctx, "resource_slices", spec.ID(), func(ctx context.Context) error {
		return waitForResourceSlices(ctx, c.client, spec)
	})
}

func waitForResourceSlices(ctx context.Context, client kubernetes.Interface, spec DRADriverSpec) error {
	ds, err := waitForDaemonSetScheduled(ctx, client, spec.Namespace, spec.DaemonSetName())
	if err != nil {
		return err
	}
	targets, err := daemonPodsByNode(ctx, client, ds)
	if err != nil || len(targets) == 0 {
		return err
	}
	nodes := map[string]bool{}
	for node := range targets {
		nodes[node] = true
	}
	pending := maps.Clone(nodes)
	byNode := nodeSlices{}
	err = WaitForList(ctx, resourceSliceLW(client), driverSlicesOnly, func(s *resourcev1.ResourceSlice, deleted bool) (bool, error) {
		node := byNode.observe(s, deleted)
		if !nodes[node] {
			return false, nil
		}
		if poolOf(byNode[node]).Complete {
			delete(pending, node)
		} else {
			pending[node] = true
		}
		return len(pending) == 0, nil
	})
	if err == nil || ctx.Err() == nil {
		return err
	}
	diagCtx, cancel := diagnosisContext(ctx)
	defer cancel()
	if fresh, err := daemonPodsByNode(diagCtx, client, ds); err == nil {
		targets = fresh
	}
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(pending)) {
		lines = append(lines, describeNodeWithoutSlices(diagCtx, client, name, targets[name], poolOf(byNode[name])))
	}
	return notReady("%d of %d nodes running the kubelet plugin have not published their devices (ResourceSlices of driver %s, pool named after the node)%s",
		len(pending), len(nodes), nvdra.DriverName, diagnosisList(lines))
}

// daemonPodsByNode maps each node ds has a pod for to its pods: bound
// there, or pinned there by the DaemonSet's node affinity while the
// scheduler has not placed them (Pending). Pods being deleted are left out.
func daemonPodsByNode(ctx context.Context, client kubernetes.Interface, ds *appsv1.DaemonSet) (map[string][]corev1.Pod, error) {
	pods, err := podsOnNode(ctx, client, ds, "")
	if err != nil {
		return nil, fmt.Errorf("listing the pods of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	byNode := map[string][]corev1.Pod{}
	for _, pod := range pods {
		if node := podTargetNode(&pod); pod.DeletionTimestamp == nil && node != noTargetNode {
			byNode[node] = append(byNode[node], pod)
		}
	}
	return byNode, nil
}

// describeNodeWithoutSlices says why node, whose plugin pods are pods,
// has not published its pool.
func describeNodeWithoutSlices(ctx context.Context, client kubernetes.Interface, node string, pods []corev1.Pod, pool nodePool) string {
	if len(pods) == 0 {
		return fmt.Sprintf("%s: %s; no kubelet plugin pod is on it any more", node, pool.describe())
	}
	pod := &pods[0]
	if podReady(pod) {
		return fmt.Sprintf("%s: %s; its kubelet plugin pod %s is Running and ready, so the plugin found no NVIDIA GPU there "+
			"or cannot reach the API server (check the driver root and `kubectl logs -n %s %s -c %s`)%s",
			node, pool.describe(), pod.Name, pod.Namespace, pod.Name, draGPUsContainer, eventSummary(ctx, client, pod, ""))
	}
	text := describePod(pod)
	return fmt.Sprintf("%s: %s; its kubelet plugin %s%s", node, pool.describe(), text, eventSummary(ctx, client, pod, text))
}
