package kube

import (
	"context"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
)

// WaitForHealthReported waits, when spec deploys the health agent, until
// every node its DaemonSet runs a pod on reports the AcceleratedHardwareReady
// condition, whatever its status (gpuhealth.ReadNode's Reported): the agent
// is then up on each node, and a fault will show. It first waits for the
// DaemonSet to have scheduled its pods. On timeout the error, a
// NotReadyError, names each node that has not reported and why: no agent
// pod on it, its pod not running (phase, waiting reason, recent events),
// or the pod runs and has not written the condition.
func (c *Cluster) WaitForHealthReported(ctx context.Context, spec DevicePluginSpec) error {
	if spec.HealthAgent == nil {
		return nil
	}
	return c.runWait(ctx, "gpu_health_reported", spec.ID(), func(ctx context.Context) error {
		return waitForHealthReported(ctx, c.client, spec)
	})
}

func waitForHealthReported(ctx context.Context, client kubernetes.Interface, spec DevicePluginSpec) error {
	ds, err := waitForDaemonSetScheduled(ctx, client, spec.Namespace, spec.HealthAgentName())
	if err != nil {
		return err
	}
	nodes, err := pluginNodes(ctx, client, ds)
	if err != nil || len(nodes) == 0 {
		return err
	}
	pending, _, err := waitForNodesWhere(ctx, client, nodes, func(node *corev1.Node) bool {
		return gpuhealth.ReadNode(node).Reported
	})
	if err == nil || ctx.Err() == nil {
		return err
	}
	diagCtx, cancel := diagnosisContext(ctx)
	defer cancel()
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(pending)) {
		lines = append(lines, describeNodeNotReporting(diagCtx, client, ds, name))
	}
	return notReady("%d of %d nodes running the GPU health agent report no %s condition%s",
		len(pending), len(nodes), gpuhealth.ConditionType, diagnosisList(lines))
}

// describeNodeNotReporting says why node has no AcceleratedHardwareReady
// condition: the state of its agent pod.
func describeNodeNotReporting(ctx context.Context, client kubernetes.Interface, ds *appsv1.DaemonSet, node string) string {
	pods, err := podsOnNode(ctx, client, ds, node)
	if err != nil {
		return fmt.Sprintf("%s: (listing its health agent pod: %v)", node, err)
	}
	// The field selector already did this, where the server applies it.
	pods = slices.DeleteFunc(pods, func(p corev1.Pod) bool { return p.Spec.NodeName != node })
	if len(pods) == 0 {
		return fmt.Sprintf("%s: no health agent pod is bound to it", node)
	}
	pod := &pods[0]
	if podReady(pod) {
		return fmt.Sprintf("%s: its health agent pod %s is Running and ready but has not written the condition "+
			"(check `kubectl logs -n %s %s`: it needs NODE_NAME and its ServiceAccount's right to patch nodes/status)%s",
			node, pod.Name, pod.Namespace, pod.Name, eventSummary(ctx, client, pod, ""))
	}
	text := describePod(pod)
	return fmt.Sprintf("%s: its health agent %s%s", node, text, eventSummary(ctx, client, pod, text))
}
