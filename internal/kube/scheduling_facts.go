package kube

import (
	"context"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// ListNodeFacts reads every node of the cluster, with or without GPUs, how
// much of resource each has allocatable and free, and whether a device
// plugin runs there, for Diagnose. Like ListInventory it makes one
// paginated LIST of nodes and one of pods.
func ListNodeFacts(ctx context.Context, client kubernetes.Interface, resource corev1.ResourceName) ([]NodeFacts, error) {
	tally := newNodeFactsTally(resource)
	if err := forEachNode(ctx, client, DefaultPageSize, "", tally.addNode); err != nil {
		return nil, err
	}
	if err := forEachBoundActivePod(ctx, client, DefaultPageSize, tally.addPod); err != nil {
		return nil, err
	}
	return tally.facts(), nil
}

// nodeFactsTally adds up NodeFacts from every node and then every bound,
// unfinished pod (nonTerminatedBoundPods), whether they come from LISTs
// (ListNodeFacts) or from the hub's caches (nodeFacts).
type nodeFactsTally struct {
	resource corev1.ResourceName
	all      []NodeFacts
	index    map[string]int // node name -> position in all
}

func newNodeFactsTally(resource corev1.ResourceName) *nodeFactsTally {
	return &nodeFactsTally{resource: resource, index: map[string]int{}}
}

// addNode adds a node, with all of its allocatable resource free.
func (t *nodeFactsTally) addNode(node *corev1.Node) {
	t.index[node.Name] = len(t.all)
	t.all = append(t.all, nodeFactsFrom(node, t.resource))
}

// addPod takes what pod requests off its node's free resource, and notes
// the node's device-plugin pod. Add the nodes first: a pod on a node not
// added is ignored.
func (t *nodeFactsTally) addPod(pod *corev1.Pod) {
	j, ok := t.index[pod.Spec.NodeName]
	if !ok {
		return
	}
	t.all[j].Free -= podResourceRequest(pod, t.resource)
	if t.all[j].DevicePluginPod == "" && isDevicePluginPod(pod) {
		t.all[j].DevicePluginPod = pod.Namespace + "/" + pod.Name
	}
}

// facts is the tally, free never below zero, sorted by node name.
func (t *nodeFactsTally) facts() []NodeFacts {
	for i := range t.all {
		t.all[i].Free = max(t.all[i].Free, 0)
	}
	sort.Slice(t.all, func(i, j int) bool { return t.all[i].Name < t.all[j].Name })
	return t.all
}

func nodeFactsFrom(node *corev1.Node, resource corev1.ResourceName) NodeFacts {
	f := NodeFacts{
		Name:        node.Name,
		Labels:      node.Labels,
		Taints:      node.Spec.Taints,
		Ready:       nodeReady(node),
		Schedulable: !node.Spec.Unschedulable,
		Allocatable: quantity(node.Status.Allocatable, resource),
		Health:      gpuhealth.ReadNode(node),
	}
	f.Free = f.Allocatable
	f.Advertised = advertisedNVIDIAResources(node)
	f.GPUHardware = gpuHardware(node)
	if major, minor := node.Labels[gpulabels.RuntimeVersionMajor], node.Labels[gpulabels.RuntimeVersionMinor]; major != "" && minor != "" {
		f.CUDAVersion = major + "." + minor
	}
	f.HasGPU = f.GPUHardware != "" || len(f.Advertised) > 0
	if g, ok := gpuNodeFrom(node); ok {
		f.HasGPU = true
		f.Product = g.Product
		f.MemoryMiB = g.MemoryMiB
		f.ComputeCapability = g.ComputeCapability
	}
	return f
}

// FailedSchedulingMessage returns the message of the newest FailedScheduling
// event the scheduler wrote about pod, e.g. "0/6 nodes are available: 1
// node(s) had untolerated taint {nvidia.com/gpu: true}, 5 Insufficient
// nvidia.com/gpu. ...", or "" when there is none.
func FailedSchedulingMessage(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) (string, error) {
	selector := fields.Set{
		"involvedObject.kind": "Pod",
		"involvedObject.name": pod.Name,
		"reason":              "FailedScheduling",
	}.AsSelector().String()
	events, err := client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return "", fmt.Errorf("listing the events of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	// The server filters by name and reason; the UID tells this pod from an
	// earlier one of the same name.
	items := slices.DeleteFunc(events.Items, func(e corev1.Event) bool {
		return e.InvolvedObject.UID != pod.UID || e.Reason != "FailedScheduling"
	})
	if len(items) == 0 {
		return "", nil
	}
	newest := slices.MaxFunc(items, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b).Time) })
	return newest.Message, nil
}

// eventTime is when an event last happened, whichever of the old
// (lastTimestamp) and new (eventTime, series) fields its writer filled.
func eventTime(e corev1.Event) metav1.Time {
	t := e.LastTimestamp
	if e.Series != nil && e.Series.LastObservedTime.After(t.Time) {
		t = metav1.Time{Time: e.Series.LastObservedTime.Time}
	}
	if e.EventTime.After(t.Time) {
		t = metav1.Time{Time: e.EventTime.Time}
	}
	return t
}

// PodUnschedulable reports whether the scheduler has tried pod and found no
// node for it (condition PodScheduled False, reason Unschedulable), with the
// scheduler's message.
func PodUnschedulable(pod *corev1.Pod) (bool, string) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true, c.Message
		}
	}
	return false, ""
}
