package kube

// This file owns waiting for a node group's nodes (an EKS managed node
// group's, say): until enough of them are Ready, or Ready and advertising
// their GPUs. It follows the nodes with one LIST and a WATCH, filtered by
// the group's label selector on the server; what it reads to explain a
// timeout is in nodegroup_diagnosis.go.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// What a NodeGroupWait waits until.
const (
	// NodeGroupReady: at least Count nodes are Ready and not cordoned.
	NodeGroupReady = "ready"
	// NodeGroupGPUsAllocatable: at least Count such nodes each advertise
	// at least GPUsPerNode allocatable nvidia.com/gpu.
	NodeGroupGPUsAllocatable = "gpus_allocatable"
)

// NodeGroupWait says what a node group's nodes must reach.
type NodeGroupWait struct {
	// Selector picks the group's nodes, e.g.
	// {"eks.amazonaws.com/nodegroup": "gpu"}. It must not be empty.
	Selector map[string]string
	// Count is how many nodes are expected (the desired size); 0 returns
	// at once.
	Count int
	// GPUsPerNode is how many nvidia.com/gpu each node must advertise as
	// allocatable, for NodeGroupGPUsAllocatable.
	GPUsPerNode int
	// Until is NodeGroupReady or NodeGroupGPUsAllocatable.
	Until string
	// Describe is how errors name the group, e.g.
	// `node group "gpu" of cluster "prod"`.
	Describe string
	// TaintKeys are the keys of the taints the group sets on every node,
	// which stay for the node's life. For NodeGroupGPUsAllocatable, a
	// Ready node with one of them that every NVIDIA device plugin
	// DaemonSet selecting the node does not tolerate ends the wait at
	// once (ErrNoDevicePluginCanRun): no pod of theirs will run there.
	TaintKeys []string
}

// NodeGroupNodes is what a node group's nodes are now.
type NodeGroupNodes struct {
	// Ready counts the nodes that are Ready and not cordoned.
	Ready int
	// AllocatableGPUs sums the allocatable nvidia.com/gpu of those nodes.
	AllocatableGPUs int64
	// Nodes names every node the selector picks, sorted.
	Nodes []string
}

// NodeGroupWaitError is a WaitForNodeGroup that ran out of time, or that
// stopped early because it cannot succeed as configured
// (ErrNoDevicePluginCanRun): what was expected, what there is, and why
// each node missing is not there yet.
type NodeGroupWaitError struct {
	// Describe names the group (NodeGroupWait.Describe).
	Describe string
	// Expected says what the wait waited for.
	Expected string
	// Seen is the group's nodes when the wait gave up.
	Seen NodeGroupNodes
	// Detail counts what there is and lists, node by node (at most
	// maxDiagnosedNodes of them), why each is not there yet; it ends with
	// the fix when a node lacks its device plugin.
	Detail string
	// Err is the context's error (context.DeadlineExceeded, say), or
	// ErrNoDevicePluginCanRun.
	Err error
}

// Error reads "timed out waiting for <group> to have <expected>: <detail>",
// or "stopped waiting for <group> to have <expected>, which cannot happen
// as configured: <detail>".
func (e *NodeGroupWaitError) Error() string {
	if errors.Is(e.Err, ErrNoDevicePluginCanRun) {
		return fmt.Sprintf("stopped waiting for %s to have %s, which cannot happen as configured: %s", e.Describe, e.Expected, e.Detail)
	}
	return fmt.Sprintf("timed out waiting for %s to have %s: %s", e.Describe, e.Expected, e.Detail)
}

// Unwrap returns the context's error, or ErrNoDevicePluginCanRun.
func (e *NodeGroupWaitError) Unwrap() error { return e.Err }

// WaitForNodeGroup watches the nodes w.Selector picks until w.Until holds
// for w.Count of them, or ctx ends, and returns them as it last saw them.
// It lists once, then follows watch events: nodes that register after it
// started count as soon as they do. When ctx ends first the error is a
// *NodeGroupWaitError that explains each missing node: not registered yet,
// NotReady (with the condition's reason and message), or short of GPUs
// (no NVIDIA device plugin DaemonSet, one that does not select the node
// and why, its pod there pending or failing, or running while the node
// advertises nothing yet). It ends at once, with a *NodeGroupWaitError
// whose Err is ErrNoDevicePluginCanRun, when a Ready node carries one of
// w.TaintKeys that the device plugins meant for it do not tolerate. An
// API server that stays unreachable or rejects
// the credentials ends the wait with that error (see Cluster.guardWait),
// and so does a 403 on listing the nodes, at once.
func (c *Cluster) WaitForNodeGroup(ctx context.Context, w NodeGroupWait) (NodeGroupNodes, error) {
	if w.Count <= 0 {
		return NodeGroupNodes{}, nil
	}
	if err := w.validate(); err != nil {
		return NodeGroupNodes{}, err
	}
	var seen NodeGroupNodes
	err := c.runWait(ctx, "node_group_"+w.Until, w.Describe, func(ctx context.Context) error {
		var err error
		seen, err = c.waitForNodeGroup(ctx, w)
		return err
	})
	return seen, err
}

// ReadNodeGroupNodes reads the nodes selector picks, in paginated LISTs
// filtered on the server.
func (c *Cluster) ReadNodeGroupNodes(ctx context.Context, selector map[string]string) (NodeGroupNodes, error) {
	if len(selector) == 0 {
		return NodeGroupNodes{}, errors.New("reading a node group's nodes: the label selector is empty, which would select every node")
	}
	var group nodeGroupState
	err := forEachNode(ctx, c.client, DefaultPageSize, labels.SelectorFromSet(selector).String(), func(node *corev1.Node) {
		group.observe(node, false, 0)
	})
	if err != nil {
		return NodeGroupNodes{}, err
	}
	return group.nodes(), nil
}

func (w NodeGroupWait) validate() error {
	switch {
	case len(w.Selector) == 0:
		return fmt.Errorf("waiting for %s: the node label selector is empty, which would select every node", w.Describe)
	case w.Until != NodeGroupReady && w.Until != NodeGroupGPUsAllocatable:
		return fmt.Errorf("waiting for %s: unknown condition %q; valid values are %q and %q", w.Describe, w.Until, NodeGroupReady, NodeGroupGPUsAllocatable)
	case w.Until == NodeGroupGPUsAllocatable && w.GPUsPerNode <= 0:
		return fmt.Errorf("waiting for %s: %s needs a number of GPUs per node, got %d", w.Describe, NodeGroupGPUsAllocatable, w.GPUsPerNode)
	}
	return nil
}

// expected says what w waits for: "2 nodes Ready" or "2 nodes Ready, each
// with at least 8 allocatable nvidia.com/gpu".
func (w NodeGroupWait) expected() string {
	text := fmt.Sprintf("%d %s Ready", w.Count, plural(int64(w.Count), "node", "nodes"))
	if w.Until == NodeGroupGPUsAllocatable {
		text += fmt.Sprintf(", each with at least %d allocatable %s", w.GPUsPerNode, ResourceGPU)
	}
	return text
}

func (c *Cluster) waitForNodeGroup(ctx context.Context, w NodeGroupWait) (NodeGroupNodes, error) {
	// A 403 is no reachability or credentials problem the guard sees,
	// and the informer would retry it until ctx ends: it ends the wait.
	watchCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	nodes := c.client.CoreV1().Nodes()
	lw := ListWatchFunctions[*corev1.NodeList]{
		List: func(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error) {
			list, err := nodes.List(ctx, opts)
			if apierrors.IsForbidden(err) {
				stop(err)
			}
			return list, err
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			wi, err := nodes.Watch(ctx, opts)
			if apierrors.IsForbidden(err) {
				stop(err)
			}
			return wi, err
		},
	}
	selector := labels.SelectorFromSet(w.Selector).String()
	group := nodeGroupState{last: map[string]*corev1.Node{}}
	checked := map[string]bool{} // nodes whose device plugins were checked once Ready
	var blocked *NodeGroupWaitError
	err := WaitForList(watchCtx, lw, func(opts *metav1.ListOptions) { opts.LabelSelector = selector },
		func(node *corev1.Node, deleted bool) (bool, error) {
			group.observe(node, deleted, w.GPUsPerNode)
			if group.satisfies(w) {
				return true, nil
			}
			if deleted || checked[node.Name] || !nodeReady(node) || node.Spec.Unschedulable {
				return false, nil
			}
			checked[node.Name] = true
			if line, taints := blockedDevicePlugin(watchCtx, c, w, node); line != "" {
				blocked = &NodeGroupWaitError{Describe: w.Describe, Expected: w.expected(), Err: ErrNoDevicePluginCanRun,
					Detail: group.summary(w) + diagnosisList([]string{line}) + "\n" + blockedFix(taints)}
				return false, blocked
			}
			return false, nil
		})
	seen := group.nodes()
	if blocked != nil && errors.Is(err, ErrNoDevicePluginCanRun) {
		blocked.Seen = seen
		return seen, blocked
	}
	if cause := context.Cause(watchCtx); apierrors.IsForbidden(cause) {
		return seen, fmt.Errorf("waiting for %s: listing its nodes (label selector %s): %w", w.Describe, selector, cause)
	}
	if err == nil || ctx.Err() == nil || guardCause(ctx) != nil {
		return seen, err
	}
	diagCtx, cancel := diagnosisContext(ctx)
	defer cancel()
	return seen, &NodeGroupWaitError{
		Describe: w.Describe,
		Expected: w.expected(),
		Seen:     seen,
		Detail:   c.diagnoseNodeGroup(diagCtx, w, &group),
		Err:      ctx.Err(),
	}
}

// nodeGroupState is a node group's nodes as last seen, with running
// counts, so that each watch event costs O(1).
type nodeGroupState struct {
	last map[string]*corev1.Node
	// ready counts the Ready, uncordoned nodes; withGPUs those of them
	// with enough allocatable GPUs; gpus sums their allocatable GPUs.
	ready, withGPUs int
	gpus            int64
}

// nodeCounts is one node's share of the running counts.
type nodeCounts struct {
	ready, withGPUs int
	gpus            int64
}

func countsOf(node *corev1.Node, gpusPerNode int) nodeCounts {
	if node == nil || !nodeReady(node) || node.Spec.Unschedulable {
		return nodeCounts{}
	}
	gpus := quantity(node.Status.Allocatable, ResourceGPU)
	counts := nodeCounts{ready: 1, gpus: gpus}
	if gpus >= int64(gpusPerNode) {
		counts.withGPUs = 1
	}
	return counts
}

// observe takes node's latest version (or its deletion) into the counts.
func (g *nodeGroupState) observe(node *corev1.Node, deleted bool, gpusPerNode int) {
	if g.last == nil {
		g.last = map[string]*corev1.Node{}
	}
	before := countsOf(g.last[node.Name], gpusPerNode)
	after := nodeCounts{}
	if deleted {
		delete(g.last, node.Name)
	} else {
		g.last[node.Name] = node
		after = countsOf(node, gpusPerNode)
	}
	g.ready += after.ready - before.ready
	g.withGPUs += after.withGPUs - before.withGPUs
	g.gpus += after.gpus - before.gpus
}

func (g *nodeGroupState) satisfies(w NodeGroupWait) bool {
	if w.Until == NodeGroupGPUsAllocatable {
		return g.withGPUs >= w.Count
	}
	return g.ready >= w.Count
}

func (g *nodeGroupState) nodes() NodeGroupNodes {
	return NodeGroupNodes{Ready: g.ready, AllocatableGPUs: g.gpus, Nodes: slices.Sorted(maps.Keys(g.last))}
}

// lacking returns the sorted names of the nodes that keep w from holding:
// not Ready or cordoned, or (for NodeGroupGPUsAllocatable) short of GPUs.
func (g *nodeGroupState) lacking(w NodeGroupWait) []string {
	var names []string
	for name, node := range g.last {
		counts := countsOf(node, w.GPUsPerNode)
		if counts.ready == 0 || (w.Until == NodeGroupGPUsAllocatable && counts.withGPUs == 0) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
