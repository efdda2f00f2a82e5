package kube

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// cachedPods returns the pods of namespace that selector matches, oldest
// first, from the hub's pod informer of namespace when one runs and has
// synced; ok is false otherwise (read them from the API server then).
func (h *informerHub) cachedPods(namespace, selector string) (pods []corev1.Pod, ok bool) {
	informer := h.runningFor(hubKey{hubPods, namespace})
	if informer == nil {
		return nil, false
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, false
	}
	for _, item := range informer.GetStore().List() {
		if p, isPod := item.(*corev1.Pod); isPod && sel.Matches(labels.Set(p.Labels)) {
			pods = append(pods, *p)
		}
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	return pods, true
}

// podsOf reads the pods of namespace that selector matches from the hub's
// cache when it runs, else from the API server (listPods).
func (c *Cluster) podsOf(ctx context.Context, namespace, selector string) ([]corev1.Pod, error) {
	if pods, ok := c.informers().cachedPods(namespace, selector); ok {
		return pods, nil
	}
	return listPods(ctx, c.client, namespace, selector)
}

// nodeFacts is ListNodeFacts' answer, from the hub's informers of every
// node and every bound pod when they run and have synced, else from the
// API server. The caches are as fresh as their watches: right for a
// diagnosis, which the next event corrects.
func (c *Cluster) nodeFacts(ctx context.Context, resource corev1.ResourceName) ([]NodeFacts, error) {
	h := c.informers()
	nodes, pods := h.runningFor(hubKey{kind: hubNodes}), h.runningFor(hubKey{kind: hubBoundPods})
	if nodes == nil || pods == nil {
		return ListNodeFacts(ctx, c.client, resource)
	}
	tally := newNodeFactsTally(resource)
	for _, item := range nodes.GetStore().List() {
		if node, ok := item.(*corev1.Node); ok {
			tally.addNode(node)
		}
	}
	for _, item := range pods.GetStore().List() {
		if pod, ok := item.(*corev1.Pod); ok {
			tally.addPod(pod)
		}
	}
	return tally.facts(), nil
}
