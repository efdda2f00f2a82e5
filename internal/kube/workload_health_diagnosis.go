package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
)

// A workload's diagnosis names the GPU health of the nodes involved, as
// their health agents report it (gpuhealth.ReadNode): the node a failed or
// crashing pod ran on, and, for a pod waiting to be scheduled, the nodes
// that would take it but for free GPUs, their state or a GPU fault. The
// scheduler does not read the condition: a node whose GPU fell off the bus
// still takes pods unless its agent taints it, so naming its health is
// what tells a user why pods there crash, or why it is no place to wait
// for.

// gpuHealthWorthNaming says whether a node's health explains anything: an
// agent reports it and it is not True (False: a fatal fault; Unknown: the
// agent cannot read the GPUs, e.g. no driver).
func gpuHealthWorthNaming(h NodeGPUHealth) bool {
	return h.Reported && h.Status != corev1.ConditionTrue
}

// formatNodeGPUHealth is one node's health, e.g. "node gpu-p5-1:
// AcceleratedHardwareReady=False since 10:42 (XID 79 on GPU 3 (GPU-…,
// 0000:9a:00.0): the GPU has fallen off the bus)": the condition's status,
// when it last changed (UTC, with the date when it is not now's), and its
// message (its reason when it has none).
func formatNodeGPUHealth(node string, h NodeGPUHealth, now time.Time) string {
	s := fmt.Sprintf("node %s: %s=%s", node, gpuhealth.ConditionType, h.Status)
	if !h.Since.IsZero() {
		s += " since " + clockSince(h.Since, now)
	}
	detail := strings.TrimSpace(h.Message)
	if detail == "" {
		detail = h.Reason
	}
	if detail != "" {
		s += " (" + detail + ")"
	}
	return s
}

// clockSince is t as "15:04" in UTC, or "2006-01-02 15:04" when t is not
// on now's UTC day.
func clockSince(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	ty, tm, td := t.Date()
	ny, nm, nd := now.Date()
	if ty == ny && tm == nm && td == nd {
		return t.Format("15:04")
	}
	return t.Format("2006-01-02 15:04")
}

// gpuHealthNotes collects the health lines of a diagnosis, each node once,
// in the order they are added.
type gpuHealthNotes struct {
	now   time.Time
	named map[string]bool
	read  map[string]bool // nodes notePodNodes read, named or not
	lines []string
}

func newGPUHealthNotes(now time.Time) *gpuHealthNotes {
	return &gpuHealthNotes{now: now, named: map[string]bool{}, read: map[string]bool{}}
}

// maxPodNodesRead caps how many nodes notePodNodes reads for one
// diagnosis: a Deployment crashing on hundreds of nodes still gets its
// diagnosis within diagnosisTimeout (from the hub's cache, reads cost
// nothing; from the API server, one GET each).
const maxPodNodesRead = 20

// add notes node's health when it is worth naming and not noted yet.
func (n *gpuHealthNotes) add(node string, h NodeGPUHealth) {
	if node == "" || n.named[node] || !gpuHealthWorthNaming(h) {
		return
	}
	n.named[node] = true
	n.lines = append(n.lines, formatNodeGPUHealth(node, h, n.now))
}

// sentence is " GPU health: node a: ...; node b: ...." with the lines
// noted since the last call, or "" when there are none.
func (n *gpuHealthNotes) sentence() string {
	if len(n.lines) == 0 {
		return ""
	}
	s := " GPU health: " + strings.Join(n.lines, "; ")
	n.lines = nil
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// noteCandidates notes the health of the nodes of d that would take the
// pod but for what waiting can change (free GPUs, not Ready, cordoned, a
// starting device plugin, the gpu-unhealthy taint) or that take it now:
// every node that fits by GPU model and count. nodes are the facts d was
// made from.
func (n *gpuHealthNotes) noteCandidates(d Diagnosis, nodes []NodeFacts) {
	candidates := slices.Clone(d.Fit)
	for _, g := range d.Groups {
		if g.Transient {
			candidates = append(candidates, g.Nodes...)
		}
	}
	byName := make(map[string]*NodeFacts, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	for _, name := range candidates {
		if f := byName[name]; f != nil {
			n.add(name, f.Health)
		}
	}
}

// nodeGPUHealth reads one node's GPU health, from the hub's node cache when
// it runs, else from the API server; ok is false when the node cannot be
// read (the diagnosis then says nothing of it).
func (c *Cluster) nodeGPUHealth(ctx context.Context, name string) (NodeGPUHealth, bool) {
	if nodes := c.informers().runningFor(hubKey{kind: hubNodes}); nodes != nil {
		if item, exists, err := nodes.GetStore().GetByKey(name); err == nil && exists {
			if node, ok := item.(*corev1.Node); ok {
				return gpuhealth.ReadNode(node), true
			}
		}
	}
	node, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return NodeGPUHealth{}, false
	}
	return gpuhealth.ReadNode(node), true
}

// notePodNodes notes the health of the nodes that pods which failed or
// whose containers are in trouble ran on, each node read once, at most
// maxPodNodesRead of them.
func (c *Cluster) notePodNodes(ctx context.Context, notes *gpuHealthNotes, pods ...*corev1.Pod) {
	for _, p := range pods {
		if p.Spec.NodeName == "" || notes.read[p.Spec.NodeName] || len(notes.read) >= maxPodNodesRead {
			continue
		}
		if p.Status.Phase != corev1.PodFailed && describeContainerTrouble(p) == "" && describeTermination(p) == "" {
			continue
		}
		notes.read[p.Spec.NodeName] = true
		if h, ok := c.nodeGPUHealth(ctx, p.Spec.NodeName); ok {
			notes.add(p.Spec.NodeName, h)
		}
	}
}
