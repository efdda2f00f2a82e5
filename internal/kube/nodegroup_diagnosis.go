package kube

// This file explains a node-group wait that ran out of time, node by node:
// not registered yet, NotReady and why, cordoned, or Ready without its GPUs
// and why (the NVIDIA device plugin DaemonSets of the cluster, whether they
// select the node, and their pod on it).

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// nodeGroupFix is what a node group whose nodes run no NVIDIA device
// plugin needs.
type nodeGroupFix int

const (
	noFix nodeGroupFix = iota
	// createPluginFix: no NVIDIA device plugin DaemonSet in the cluster.
	createPluginFix
	// selectNodesFix: device plugin DaemonSets that skip the nodes.
	selectNodesFix
)

var nodeGroupFixes = map[nodeGroupFix]string{
	createPluginFix: "Fix: create gpu_device_plugin before the node group (depends_on), " +
		"or use a Bottlerocket NVIDIA AMI, whose OS runs the device plugin.",
	selectNodesFix: "Fix: let the device plugin's DaemonSet place a pod on these nodes (gpu_device_plugin's tolerations, " +
		"node_selector and gpu_node_affinity), or use a Bottlerocket NVIDIA AMI, whose OS runs the device plugin.",
}

// diagnoseNodeGroup counts what g has against w and says why each node
// missing is not there yet, at most maxDiagnosedNodes of them.
func (c *Cluster) diagnoseNodeGroup(ctx context.Context, w NodeGroupWait, g *nodeGroupState) string {
	registered := len(g.last)
	summary := g.summary(w)
	var lines []string
	if registered < w.Count {
		lines = append(lines, fmt.Sprintf("not registered yet: %d of %d %s joined the cluster (label selector %s)",
			registered, w.Count, plural(int64(w.Count), "node has", "nodes have"), labels.SelectorFromSet(w.Selector).String()))
	}
	lacking := g.lacking(w)
	shown := lacking[:min(len(lacking), maxDiagnosedNodes)]
	var plugins *devicePluginPlacement
	fixes := map[nodeGroupFix]bool{}
	for _, name := range shown {
		node := g.last[name]
		line, fix := describeLackingNode(node), noFix
		if line == "" {
			if plugins == nil {
				plugins = readDevicePluginPlacement(ctx, c.client)
			}
			line, fix = plugins.explainMissingGPUs(ctx, c.client, node, w.GPUsPerNode)
		}
		fixes[fix] = true
		lines = append(lines, line)
	}
	text := summary + diagnosisList(lines)
	if more := len(lacking) - len(shown); more > 0 {
		text += fmt.Sprintf("\n  - and %d more %s", more, plural(int64(more), "node", "nodes"))
	}
	for _, fix := range []nodeGroupFix{createPluginFix, selectNodesFix} {
		if fixes[fix] {
			text += "\n" + nodeGroupFixes[fix]
		}
	}
	return text
}

// summary counts what g has against w: "2 of 2 nodes registered, 2 Ready,
// 0 with 8 allocatable nvidia.com/gpu".
func (g *nodeGroupState) summary(w NodeGroupWait) string {
	text := fmt.Sprintf("%d of %d %s registered, %d Ready", len(g.last), w.Count, plural(int64(w.Count), "node", "nodes"), g.ready)
	if w.Until == NodeGroupGPUsAllocatable {
		text += fmt.Sprintf(", %d with %d allocatable %s", g.withGPUs, w.GPUsPerNode, ResourceGPU)
	}
	return text
}

// describeLackingNode says why node is not Ready or is cordoned, or ""
// when it is Ready and schedulable (then its GPUs are what it lacks).
func describeLackingNode(node *corev1.Node) string {
	if !nodeReady(node) {
		return node.Name + ": " + describeNodeNotReady(node)
	}
	if node.Spec.Unschedulable {
		return node.Name + ": Ready but cordoned (spec.unschedulable); `kubectl uncordon " + node.Name + "` if nothing drains it"
	}
	return ""
}

// describeNodeNotReady: "NotReady: KubeletNotReady: container runtime
// network not ready ..." or "no Ready condition yet".
func describeNodeNotReady(node *corev1.Node) string {
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		text := "NotReady (Ready is " + string(c.Status) + ")"
		if c.Reason != "" {
			text += ": " + c.Reason
		}
		if c.Message != "" {
			text += ": " + c.Message
		}
		return text
	}
	return "NotReady: no Ready condition yet (its kubelet has not reported)"
}

// devicePluginPlacement is the cluster's NVIDIA device plugin DaemonSets
// and, for each, its pods by the node they are bound or pinned to.
type devicePluginPlacement struct {
	daemonSets []*appsv1.DaemonSet
	podsByNode []map[string]*corev1.Pod
	err        error
}

// readDevicePluginPlacement lists the DaemonSets of every namespace and
// keeps the NVIDIA device plugins not being deleted, with their pods.
func readDevicePluginPlacement(ctx context.Context, client kubernetes.Interface) *devicePluginPlacement {
	p := &devicePluginPlacement{}
	list, err := client.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		p.err = fmt.Errorf("listing DaemonSets: %w", err)
		return p
	}
	for i := range list.Items {
		ds := &list.Items[i]
		if ds.DeletionTimestamp != nil || !isNVIDIADevicePlugin(&ds.Spec.Template.Spec) {
			continue
		}
		pods, err := podsOnNode(ctx, client, ds, "")
		if err != nil {
			p.err = fmt.Errorf("listing the pods of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
			return p
		}
		byNode := map[string]*corev1.Pod{}
		for j := range pods {
			target := podTargetNode(&pods[j])
			if _, seen := byNode[target]; !seen {
				byNode[target] = &pods[j]
			}
		}
		p.daemonSets = append(p.daemonSets, ds)
		p.podsByNode = append(p.podsByNode, byNode)
	}
	return p
}

// isNVIDIADevicePlugin reports whether pods of spec run NVIDIA's device
// plugin: they mount the kubelet's device-plugins directory (as every
// device plugin does, see isDevicePluginPod) from an NVIDIA image.
func isNVIDIADevicePlugin(spec *corev1.PodSpec) bool {
	if !isDevicePluginPod(&corev1.Pod{Spec: *spec}) {
		return false
	}
	for _, c := range spec.Containers {
		image := strings.ToLower(c.Image)
		if strings.Contains(image, "nvidia") || strings.Contains(image, "k8s-device-plugin") {
			return true
		}
	}
	return false
}

// explainMissingGPUs says why node, Ready, advertises fewer than want
// allocatable GPUs, and which fix applies when no device plugin pod
// reaches the node.
func (p *devicePluginPlacement) explainMissingGPUs(ctx context.Context, client kubernetes.Interface, node *corev1.Node, want int) (string, nodeGroupFix) {
	head := fmt.Sprintf("%s: Ready, allocatable %s %d of %d", node.Name, ResourceGPU, quantity(node.Status.Allocatable, ResourceGPU), want)
	if p.err != nil {
		return fmt.Sprintf("%s (%v)", head, p.err), noFix
	}
	if len(p.daemonSets) == 0 {
		return head + ": no NVIDIA device plugin DaemonSet in the cluster, so nothing advertises its GPUs", createPluginFix
	}
	for i, ds := range p.daemonSets {
		pod, ok := p.podsByNode[i][node.Name]
		if !ok {
			continue
		}
		if podReady(pod) {
			return fmt.Sprintf("%s: the device plugin pod %s/%s runs on it but its GPUs are not advertised yet "+
				"(check the NVIDIA driver and `kubectl logs -n %s %s`)%s",
				head, pod.Namespace, pod.Name, pod.Namespace, pod.Name, eventSummary(ctx, client, pod, "")), noFix
		}
		text := describePod(pod)
		return fmt.Sprintf("%s: its device plugin (DaemonSet %s/%s) %s%s", head, ds.Namespace, ds.Name, text, eventSummary(ctx, client, pod, text)), noFix
	}
	var reasons []string
	fix := selectNodesFix
	for _, ds := range p.daemonSets {
		reason := daemonSetSkips(ds, node)
		if reason == "" {
			reason = "it selects the node but has created no pod there yet"
			fix = noFix // its controller is behind, or cannot create pods: no setting to change
		}
		reasons = append(reasons, fmt.Sprintf("DaemonSet %s/%s: %s", ds.Namespace, ds.Name, reason))
	}
	return head + ": no NVIDIA device plugin pod on it (" + strings.Join(reasons, "; ") + ")", fix
}
