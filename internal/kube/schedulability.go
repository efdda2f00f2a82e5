package kube

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// GPURequest is what one pod of a GPU workload asks of a node: an amount of
// one GPU resource, and the kind of GPU it must be.
type GPURequest struct {
	Resource     corev1.ResourceName // nvidia.com/gpu, nvidia.com/gpu.shared or nvidia.com/mig-<profile>
	Count        int64
	Products     []string // acceptable nvidia.com/gpu.product values; empty accepts any
	MinMemoryMiB int64    // per GPU; zero accepts any
	MinCompute   *ComputeCapability
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration // every toleration of the pod
}

// ComputeCapability is a CUDA compute capability, e.g. 8.6.
type ComputeCapability struct{ Major, Minor int }

// ParseComputeCapability reads "major.minor", e.g. "8.0" or "9.0".
func ParseComputeCapability(s string) (ComputeCapability, error) {
	major, minor, ok := strings.Cut(s, ".")
	if !ok {
		return ComputeCapability{}, fmt.Errorf("compute capability %q is not of the form major.minor, e.g. \"8.0\"", s)
	}
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil || ma < 0 || mi < 0 || strings.HasPrefix(minor, "+") || strings.HasPrefix(major, "+") {
		return ComputeCapability{}, fmt.Errorf("compute capability %q is not of the form major.minor, e.g. \"8.0\"", s)
	}
	return ComputeCapability{Major: ma, Minor: mi}, nil
}

func (c ComputeCapability) String() string { return fmt.Sprintf("%d.%d", c.Major, c.Minor) }

// AtLeast reports whether c is least or newer.
func (c ComputeCapability) AtLeast(least ComputeCapability) bool {
	return c.Major > least.Major || (c.Major == least.Major && c.Minor >= least.Minor)
}

// NodeFacts is what decides whether a node can take a GPU pod: its labels,
// taints and state, and how much of the requested GPU resource it has.
type NodeFacts struct {
	Name              string
	Labels            map[string]string
	Taints            []corev1.Taint
	Ready             bool
	Schedulable       bool // false when cordoned
	HasGPU            bool // nvidia.com/gpu capacity or a GFD/NFD presence label
	Product           string
	MemoryMiB         int64
	ComputeCapability string // "major.minor", "" when GFD has not labeled the node
	Allocatable       int64  // of the requested resource
	Free              int64  // allocatable minus what bound, running pods request
}

// A nodeReason is why a node cannot take the pod. Reasons are checked in
// order and a node is counted under the first that applies, so the counts
// add up to the number of nodes.
type nodeReason int

const (
	reasonNoGPU nodeReason = iota
	reasonNodeSelector
	reasonProduct
	reasonMemory
	reasonCompute
	reasonTaint
	reasonNotReady
	reasonCordoned
	reasonAllocatable
	reasonBusy
	reasonCount
)

// transient reasons may pass without anyone changing the workload: GPUs
// free up, nodes come back or are uncordoned, a taint such as
// node.kubernetes.io/not-ready goes away.
func (r nodeReason) transient() bool {
	return r == reasonBusy || r == reasonNotReady || r == reasonCordoned
}

// ReasonGroup is the nodes that cannot take the pod for one reason.
type ReasonGroup struct {
	Phrase    string   // e.g. "lack nvidia.com/gpu ≥ 2 free"
	Nodes     []string // sorted as the input
	Details   []string // per node, e.g. its product; same order as Nodes, may be empty
	Transient bool
}

// Diagnosis says which nodes can take one pod of a workload now, and why the
// others cannot.
type Diagnosis struct {
	Nodes  int      // nodes considered
	Fit    []string // nodes that can take the pod now
	Groups []ReasonGroup
}

// CouldEverFit reports whether waiting can help: a node takes the pod now,
// or would once GPUs are freed, a node is Ready again or uncordoned. When it
// is false, no node can ever run the pod as it is written.
func (d Diagnosis) CouldEverFit() bool {
	if len(d.Fit) > 0 {
		return true
	}
	for _, g := range d.Groups {
		if g.Transient {
			return true
		}
	}
	return false
}

// Diagnose checks every node against the request, the way the scheduler's
// filters would, and groups those that cannot take the pod by reason.
func Diagnose(nodes []NodeFacts, req GPURequest) Diagnosis {
	d := Diagnosis{Nodes: len(nodes)}
	groups := make([]ReasonGroup, reasonCount)
	for i := range nodes {
		n := &nodes[i]
		reason, detail, ok := checkNode(n, req)
		if ok {
			d.Fit = append(d.Fit, n.Name)
			continue
		}
		g := &groups[reason]
		g.Nodes = append(g.Nodes, n.Name)
		if detail != "" {
			g.Details = append(g.Details, n.Name+": "+detail)
		}
	}
	for r := range reasonCount {
		if len(groups[r].Nodes) == 0 {
			continue
		}
		g := groups[r]
		g.Phrase = reasonPhrase(r, req, len(g.Nodes) == 1)
		g.Transient = r.transient()
		d.Groups = append(d.Groups, g)
	}
	return d
}

func checkNode(n *NodeFacts, req GPURequest) (nodeReason, string, bool) {
	if !n.HasGPU && n.Allocatable == 0 {
		return reasonNoGPU, "", false
	}
	for k, v := range req.NodeSelector {
		if got, ok := n.Labels[k]; !ok || got != v {
			return reasonNodeSelector, "", false
		}
	}
	if len(req.Products) > 0 && !productMatches(n.Product, req.Products) {
		return reasonProduct, orUnlabeled(n.Product), false
	}
	if req.MinMemoryMiB > 0 && n.MemoryMiB < req.MinMemoryMiB {
		return reasonMemory, fmt.Sprintf("%d MiB", n.MemoryMiB), false
	}
	if req.MinCompute != nil {
		cc, err := ParseComputeCapability(n.ComputeCapability)
		if err != nil || !cc.AtLeast(*req.MinCompute) {
			return reasonCompute, orUnlabeled(n.ComputeCapability), false
		}
	}
	if t := untoleratedTaint(n.Taints, req.Tolerations); t != nil {
		detail := t.Key
		if t.Value != "" {
			detail += "=" + t.Value
		}
		detail += ":" + string(t.Effect)
		// node.kubernetes.io/ taints (not-ready, unreachable, memory-pressure,
		// ...) are the node lifecycle controller's: they come and go with
		// the node's health.
		if strings.HasPrefix(t.Key, "node.kubernetes.io/") {
			return reasonNotReady, detail, false
		}
		return reasonTaint, detail, false
	}
	if !n.Ready {
		return reasonNotReady, "", false
	}
	if !n.Schedulable {
		return reasonCordoned, "", false
	}
	if n.Allocatable < req.Count {
		return reasonAllocatable, fmt.Sprintf("%d", n.Allocatable), false
	}
	if n.Free < req.Count {
		return reasonBusy, fmt.Sprintf("%d free", n.Free), false
	}
	return 0, "", true
}

// productMatches accepts a node's product when it is one of products, or
// one of them with GFD's "-SHARED" suffix (GPUs shared by time-slicing).
func productMatches(product string, products []string) bool {
	return slices.Contains(products, product) ||
		slices.Contains(products, strings.TrimSuffix(product, gpulabels.SharedProductSuffix))
}

func orUnlabeled(s string) string {
	if s == "" {
		return "not labeled by GPU Feature Discovery"
	}
	return s
}

// untoleratedTaint returns the first NoSchedule or NoExecute taint that no
// toleration tolerates, as the scheduler's TaintToleration filter does.
func untoleratedTaint(taints []corev1.Taint, tolerations []corev1.Toleration) *corev1.Taint {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(t) }) {
			return t
		}
	}
	return nil
}

func reasonPhrase(r nodeReason, req GPURequest, one bool) string {
	verb := func(singular, plural string) string {
		if one {
			return singular
		}
		return plural
	}
	switch r {
	case reasonNoGPU:
		return verb("has", "have") + " no NVIDIA GPU"
	case reasonNodeSelector:
		return verb("does", "do") + " not match node_selector " + formatSelector(req.NodeSelector)
	case reasonProduct:
		return verb("is", "are") + " not in gpu.products [" + strings.Join(req.Products, ", ") + "]"
	case reasonMemory:
		return verb("has", "have") + " less than gpu.min_memory_gib " + formatGiB(req.MinMemoryMiB) + " GiB per GPU"
	case reasonCompute:
		return verb("has", "have") + " a compute capability below gpu.min_compute_capability " + req.MinCompute.String()
	case reasonTaint:
		return verb("has", "have") + " a taint the workload does not tolerate (add it to tolerations)"
	case reasonNotReady:
		return verb("is", "are") + " not Ready"
	case reasonCordoned:
		return verb("is", "are") + " cordoned"
	case reasonAllocatable:
		return verb("has", "have") + " fewer than " + strconv.FormatInt(req.Count, 10) + " " + string(req.Resource) + " allocatable in all"
	case reasonBusy:
		return verb("lacks", "lack") + " " + string(req.Resource) + " ≥ " + strconv.FormatInt(req.Count, 10) + " free"
	}
	return "cannot take it"
}

func formatGiB(mib int64) string {
	if mib%1024 == 0 {
		return strconv.FormatInt(mib/1024, 10)
	}
	return strconv.FormatFloat(float64(mib)/1024, 'f', 1, 64)
}

func formatSelector(sel map[string]string) string {
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + sel[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// maxNamedNodes caps how many node names a sentence lists; a 5,000-node
// cluster gets "and 4,990 more", not a wall of names.
const maxNamedNodes = 5

// String is the diagnosis as one sentence, e.g. "0 of 6 nodes can run it:
// 3 lack nvidia.com/gpu ≥ 2 free (gpu-g5-0, gpu-g5-1, gpu-g4dn-0), 2 are
// not in gpu.products [NVIDIA-H100-80GB-HBM3] (gpu-p4d-0:
// NVIDIA-A100-SXM4-40GB, ...), 1 has no NVIDIA GPU (cpu-0)".
func (d Diagnosis) String() string {
	var b strings.Builder
	noun := "nodes"
	if d.Nodes == 1 {
		noun = "node"
	}
	fmt.Fprintf(&b, "%d of %d %s can run it", len(d.Fit), d.Nodes, noun)
	if len(d.Fit) > 0 {
		fmt.Fprintf(&b, " now (%s)", nameList(d.Fit))
	}
	if d.Nodes == 0 {
		b.WriteString(": the cluster has no nodes")
		return b.String()
	}
	for i, g := range d.Groups {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		names := g.Nodes
		if len(g.Details) == len(g.Nodes) {
			names = g.Details
		}
		fmt.Fprintf(&b, "%d %s (%s)", len(g.Nodes), g.Phrase, nameList(names))
	}
	return b.String()
}

func nameList(names []string) string {
	if len(names) <= maxNamedNodes {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxNamedNodes], ", ") + fmt.Sprintf(" and %d more", len(names)-maxNamedNodes)
}
