package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// diagnosisTimeout bounds the reads that explain a failed wait, which run
// after the wait's own context has expired or been canceled.
const diagnosisTimeout = 30 * time.Second

// maxDiagnosedNodes keeps an error readable on a large cluster.
const maxDiagnosedNodes = 10

// recentEvents is how many of a pod's latest events a diagnosis quotes.
const recentEvents = 3

// diagnosisContext outlives the wait it explains, keeping ctx's values (the
// logger) but not its deadline or cancellation.
func diagnosisContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), diagnosisTimeout)
}

// describeNodeWithoutGPUs says why node (last seen as seen, may be nil)
// advertises none of the plugin's devices.
func describeNodeWithoutGPUs(ctx context.Context, client kubernetes.Interface, ds *appsv1.DaemonSet, name string, seen *corev1.Node, config DevicePluginConfig) string {
	resource := config.AdvertisedGPUResource()
	var nodeFacts string
	if seen != nil {
		allocatable, capacity := seen.Status.Allocatable[corev1.ResourceName(resource)], seen.Status.Capacity[corev1.ResourceName(resource)]
		nodeFacts = fmt.Sprintf("allocatable %s %s, capacity %s", resource, allocatable.String(), capacity.String())
		if _, ok := seen.Labels[gpulabels.Count]; !ok {
			nodeFacts += "; GPU Feature Discovery reports no GPU on it (no " + gpulabels.Count + " label)"
		}
	}
	pods, err := podsOnNode(ctx, client, ds, name)
	if err != nil {
		return fmt.Sprintf("%s: %s (listing its plugin pod: %v)", name, nodeFacts, err)
	}
	if len(pods) == 0 {
		return fmt.Sprintf("%s: %s; no plugin pod is bound to it any more", name, nodeFacts)
	}
	pod := &pods[0]
	if podReady(pod) {
		return fmt.Sprintf("%s: %s; its plugin pod %s is Running and ready, so the plugin found no NVIDIA GPU there "+
			"or could not register with the kubelet (check the driver, the container runtime, and `kubectl logs -n %s %s`)%s",
			name, nodeFacts, pod.Name, pod.Namespace, pod.Name, eventSummary(ctx, client, pod, ""))
	}
	text := describePod(pod)
	return fmt.Sprintf("%s: %s; its plugin %s%s", name, nodeFacts, text, eventSummary(ctx, client, pod, text))
}

// describeNotReadyPods says, for each pod of ds that is not ready, why.
func describeNotReadyPods(ctx context.Context, client kubernetes.Interface, ds *appsv1.DaemonSet) []string {
	pods, err := podsOnNode(ctx, client, ds, "")
	if err != nil {
		return []string{fmt.Sprintf("(listing the pods: %v)", err)}
	}
	var lines []string
	for i := range pods {
		pod := &pods[i]
		if podReady(pod) {
			continue
		}
		text := describePod(pod)
		lines = append(lines, fmt.Sprintf("%s: %s%s", podTargetNode(pod), text, eventSummary(ctx, client, pod, text)))
	}
	return lines
}

// podsOnNode lists ds's pods, those bound to node when it is not "".
func podsOnNode(ctx context.Context, client kubernetes.Interface, ds *appsv1.DaemonSet, node string) ([]corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, err
	}
	opts := metav1.ListOptions{LabelSelector: selector.String()}
	if node != "" {
		opts.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
	}
	list, err := client.CoreV1().Pods(ds.Namespace).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

func podReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	return slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// describePod: "plugin pod x is Pending: Unschedulable: 0/3 nodes ..." or
// "... container c is waiting: ImagePullBackOff: ...".
func describePod(pod *corev1.Pod) string {
	text := fmt.Sprintf("pod %s is %s", pod.Name, pod.Status.Phase)
	if pod.DeletionTimestamp != nil {
		text += " and being deleted"
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			text += ": " + c.Reason + ": " + c.Message
		}
	}
	for _, cs := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			text += fmt.Sprintf("; container %s is waiting: %s", cs.Name, cs.State.Waiting.Reason)
			if cs.State.Waiting.Message != "" {
				text += ": " + cs.State.Waiting.Message
			}
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
			text += fmt.Sprintf("; container %s exited %d (%s)", cs.Name, cs.State.Terminated.ExitCode, cs.State.Terminated.Reason)
		case cs.RestartCount > 0:
			text += fmt.Sprintf("; container %s restarted %d times", cs.Name, cs.RestartCount)
		}
	}
	return text
}

// podTargetNode is the node a pod is bound to or, for a DaemonSet pod not
// scheduled yet, the node its affinity pins it to.
func podTargetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range term.MatchFields {
				if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return noTargetNode
}

// noTargetNode is podTargetNode's answer for a pod bound and pinned nowhere.
const noTargetNode = "(no node)"

// eventSummary quotes the pod's latest events that said already does not:
// "; recent events: Warning FailedMount: ...".
func eventSummary(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, said string) string {
	list, err := client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.name", pod.Name),
			fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)),
		).String(),
	})
	if err != nil {
		return ""
	}
	events := list.Items
	slices.SortFunc(events, func(a, b corev1.Event) int { return eventLastSeen(b).Compare(eventLastSeen(a)) })
	var parts []string
	for _, e := range events {
		message := strings.TrimSpace(e.Message)
		if message == "" || strings.Contains(said, message) {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, message))
		if len(parts) == recentEvents {
			break
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; recent events: " + strings.Join(parts, " | ")
}

func eventLastSeen(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// bulletList renders lines as an indented list under a summary, at most
// maxDiagnosedNodes of them.
func diagnosisList(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(":")
	for _, line := range lines[:min(len(lines), maxDiagnosedNodes)] {
		b.WriteString("\n  - " + line)
	}
	if len(lines) > maxDiagnosedNodes {
		fmt.Fprintf(&b, "\n  - and %d more", len(lines)-maxDiagnosedNodes)
	}
	return b.String()
}
