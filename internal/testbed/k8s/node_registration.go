package k8s

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// nodeCreateWorkers is how many nodes AddNodes creates at once.
const nodeCreateWorkers = 32

// AddNode registers a node that kwok takes over and marks Ready shortly
// after; it does not wait for that (see WaitForNodesReady). Its kubelet
// reports the cluster's release (an attached cluster's nodes: the newest).
func (c *Cluster) AddNode(ctx context.Context, spec NodeSpec) error {
	node, err := nodeObject(spec)
	if err != nil {
		return fmt.Errorf("building node %s: %w", spec.Name, err)
	}
	if c.version != "" {
		node.Status.NodeInfo.KubeletVersion = c.version
	}
	if _, err := c.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating node %s: %w", spec.Name, err)
	}
	return nil
}

// AddNodes registers many nodes concurrently, like AddNode; the error joins
// every failure.
func (c *Cluster) AddNodes(ctx context.Context, specs []NodeSpec) error {
	work := make(chan NodeSpec)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for range min(nodeCreateWorkers, len(specs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for spec := range work {
				if err := c.AddNode(ctx, spec); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, spec := range specs {
		work <- spec
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}

// DeleteNode removes a node; a node that is already gone is not an error.
func (c *Cluster) DeleteNode(ctx context.Context, name string) error {
	err := c.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", name, err)
	}
	return nil
}

// WaitForNodesReady waits until every named node is Ready and the node
// lifecycle controller has lifted its not-ready taint, so pods can be
// scheduled there. It lists the nodes once and then follows a watch, which
// stays cheap with thousands of nodes. ctx bounds the wait.
func (c *Cluster) WaitForNodesReady(ctx context.Context, names ...string) error {
	pending := make(map[string]bool, len(names))
	for _, name := range names {
		pending[name] = true
	}
	if len(pending) == 0 {
		return nil
	}
	settle := func(node *corev1.Node) bool {
		if pending[node.Name] && isSchedulable(node) {
			delete(pending, node.Name)
		}
		return len(pending) == 0
	}
	nodes := c.client.CoreV1().Nodes()
	lw := &cache.ListWatch{
		ListFunc: func(options metav1.ListOptions) (runtime.Object, error) { return nodes.List(ctx, options) },
		WatchFunc: func(options metav1.ListOptions) (watch.Interface, error) {
			return nodes.Watch(ctx, options)
		},
	}
	precondition := func(store cache.Store) (bool, error) {
		for _, obj := range store.List() {
			if node, ok := obj.(*corev1.Node); ok {
				settle(node)
			}
		}
		return len(pending) == 0, nil
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Node{}, precondition, func(event watch.Event) (bool, error) {
		node, ok := event.Object.(*corev1.Node)
		return ok && event.Type != watch.Deleted && settle(node), nil
	})
	if err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return fmt.Errorf("waiting for %d nodes to be Ready: %w (not ready: %s)", len(names), err, abbreviate(slices.Sorted(maps.Keys(pending)), 5))
	}
	return nil
}

// isSchedulable: Ready, and without the not-ready taint that admission
// puts on every new node.
func isSchedulable(node *corev1.Node) bool {
	ready := slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
	tainted := slices.ContainsFunc(node.Spec.Taints, func(taint corev1.Taint) bool {
		return taint.Key == corev1.TaintNodeNotReady
	})
	return ready && !tainted
}

func abbreviate(names []string, limit int) string {
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:limit], ", "), len(names)-limit)
}
