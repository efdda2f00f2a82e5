package kube

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
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
	MinCUDA      *CUDAVersion
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
	HasGPU            bool // NVIDIA GPU hardware: GPUHardware says what tells, or an NVIDIA resource is advertised
	Product           string
	MemoryMiB         int64
	ComputeCapability string // "major.minor", "" when GFD has not labeled the node
	CUDAVersion       string // CUDA version the driver supports, "major.minor"; "" when GFD has not labeled the node
	Allocatable       int64  // of the requested resource
	Free              int64  // allocatable minus what bound, running pods request

	// GPUHardware is what tells that the node has NVIDIA GPUs whether or
	// not a device plugin advertises them, e.g.
	// "nvidia.com/gpu.present=true" or "instance type g5.xlarge (1
	// NVIDIA-A10G)"; "" when nothing does.
	GPUHardware string
	// Advertised is every nvidia.com/ resource the node has allocatable
	// (nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-<profile>, ...);
	// zero amounts are left out. Empty means no NVIDIA device plugin serves
	// the node.
	Advertised map[corev1.ResourceName]int64
	// DevicePluginPod is namespace/name of an active pod on the node that
	// mounts the kubelet's device-plugins directory: a device plugin, perhaps
	// still starting. "" when there is none.
	DevicePluginPod string
	// Health is the node's GPU health as its health agent reports it
	// (gpuhealth.ReadNode). The scheduler does not read it: it says why a
	// node that fits is a poor place, or where the gpu-unhealthy taint
	// comes from.
	Health NodeGPUHealth
}

// advertisesNothing reports whether no NVIDIA device plugin has made any
// NVIDIA resource allocatable on the node.
func (n *NodeFacts) advertisesNothing() bool { return len(n.Advertised) == 0 && n.Allocatable == 0 }

// A nodeReason is why a node cannot take the pod. A node is counted under
// the first reason checkNode finds, so the counts add up to the number of
// nodes; groups are listed in this order.
type nodeReason int

const (
	reasonNoGPU nodeReason = iota
	reasonNodeSelector
	reasonNoDevicePlugin
	reasonProduct
	reasonMemory
	reasonCompute
	reasonCUDA
	reasonTaint
	reasonPluginStarting
	reasonAllocatable
	reasonNotReady
	reasonGPUUnhealthy
	reasonCordoned
	reasonBusy
	reasonCount
)

// transient reasons may pass without anyone changing the workload: GPUs
// free up, nodes come back or are uncordoned, a taint such as
// node.kubernetes.io/not-ready goes away, a device plugin that is starting
// advertises its GPUs, a GPU fault clears (the health agent removes its
// taint on a reset or reboot, or node repair replaces the node).
func (r nodeReason) transient() bool {
	return r == reasonBusy || r == reasonNotReady || r == reasonCordoned || r == reasonPluginStarting || r == reasonGPUUnhealthy
}

// ReasonGroup is the nodes that cannot take the pod for one reason.
type ReasonGroup struct {
	Phrase    string   // e.g. "lack nvidia.com/gpu ≥ 2 free"
	Nodes     []string // closest to taking the pod first (most GPUs, memory, ...), else as the input
	Details   []string // per node, e.g. its product; same order as Nodes, may be empty
	Transient bool

	reason nodeReason
}

// Diagnosis says which nodes can take one pod of a workload now, and why the
// others cannot.
type Diagnosis struct {
	Nodes  int      // nodes considered
	Fit    []string // nodes that can take the pod now
	Groups []ReasonGroup
	// Advertising is how many nodes have any NVIDIA resource allocatable,
	// whether or not they suit the pod.
	Advertising int
}

// CouldEverFit reports whether waiting can help: a node takes the pod now,
// or would once GPUs are freed, a node is Ready again or uncordoned, or a
// starting device plugin advertises its GPUs. When it is false, no node can
// ever run the pod as it is written.
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

// group returns the group of nodes excluded for reason r, or nil.
func (d Diagnosis) group(r nodeReason) *ReasonGroup {
	for i := range d.Groups {
		if d.Groups[i].reason == r {
			return &d.Groups[i]
		}
	}
	return nil
}

// Diagnose checks every node against the request, the way the scheduler's
// filters would, and groups those that cannot take the pod by reason. In
// each group the nodes that come closest are listed first: most GPUs
// allocatable, most free, most memory, newest compute capability.
func Diagnose(nodes []NodeFacts, req GPURequest) Diagnosis {
	d := Diagnosis{Nodes: len(nodes)}
	type entry struct {
		node   *NodeFacts
		detail string
	}
	groups := make([][]entry, reasonCount)
	for i := range nodes {
		n := &nodes[i]
		if !n.advertisesNothing() {
			d.Advertising++
		}
		reason, detail, ok := checkNode(n, req)
		if ok {
			d.Fit = append(d.Fit, n.Name)
			continue
		}
		groups[reason] = append(groups[reason], entry{n, detail})
	}
	for r := range reasonCount {
		entries := groups[r]
		if len(entries) == 0 {
			continue
		}
		if closer := closeness(r); closer != nil {
			slices.SortStableFunc(entries, func(a, b entry) int { return closer(b.node, a.node) })
		}
		g := ReasonGroup{Phrase: reasonPhrase(r, req, len(entries) == 1), Transient: r.transient(), reason: r}
		for _, e := range entries {
			g.Nodes = append(g.Nodes, e.node.Name)
			if e.detail != "" {
				g.Details = append(g.Details, e.node.Name+": "+e.detail)
			}
		}
		d.Groups = append(d.Groups, g)
	}
	return d
}

// closeness orders the nodes of one reason group by how close each comes
// to taking the pod (positive when a comes closer than b), so that a
// truncated list still shows the best candidates; nil keeps the input
// order.
func closeness(r nodeReason) func(a, b *NodeFacts) int {
	switch r {
	case reasonAllocatable:
		return func(a, b *NodeFacts) int { return cmp.Compare(a.Allocatable, b.Allocatable) }
	case reasonBusy:
		return func(a, b *NodeFacts) int { return cmp.Compare(a.Free, b.Free) }
	case reasonMemory:
		return func(a, b *NodeFacts) int { return cmp.Compare(a.MemoryMiB, b.MemoryMiB) }
	case reasonCompute:
		return func(a, b *NodeFacts) int {
			ca, errA := ParseComputeCapability(a.ComputeCapability)
			cb, errB := ParseComputeCapability(b.ComputeCapability)
			switch {
			case errA != nil || errB != nil:
				return cmp.Compare(boolInt(errA == nil), boolInt(errB == nil))
			case ca.Major != cb.Major:
				return cmp.Compare(ca.Major, cb.Major)
			}
			return cmp.Compare(ca.Minor, cb.Minor)
		}
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkNode finds why n cannot take the pod, or ok. What no waiting can
// change (labels, taints, allocatable) is checked before what can (node
// health, cordon, busy GPUs), so a node is never called transient while a
// permanent reason excludes it too.
func checkNode(n *NodeFacts, req GPURequest) (nodeReason, string, bool) {
	if !n.HasGPU && n.advertisesNothing() {
		return reasonNoGPU, "", false
	}
	for k, v := range req.NodeSelector {
		if got, ok := n.Labels[k]; !ok || got != v {
			return reasonNodeSelector, "", false
		}
	}
	// A GPU criterion that the node's labels contradict excludes it,
	// whatever runs there. A missing label is blamed on the missing device
	// plugin first: GFD is deployed with it.
	reason, detail, unlabeled := labelMismatch(n, req)
	if reason != reasonCount && !unlabeled {
		return reason, detail, false
	}
	if n.advertisesNothing() && n.DevicePluginPod == "" {
		return reasonNoDevicePlugin, n.GPUHardware, false
	}
	if reason != reasonCount {
		return reason, detail, false
	}
	if t := untoleratedTaint(n.Taints, req.Tolerations, false); t != nil {
		return reasonTaint, formatTaint(t), false
	}
	if n.advertisesNothing() {
		return reasonPluginStarting, n.DevicePluginPod, false
	}
	if n.Allocatable < req.Count {
		return reasonAllocatable, allocatableDetail(n, req.Resource), false
	}
	if reason, detail, ok := nodeHealth(n, req); !ok {
		return reason, detail, false
	}
	if n.Free < req.Count {
		return reasonBusy, fmt.Sprintf("%d free", n.Free), false
	}
	return 0, "", true
}

// nodeHealth finds what keeps n from taking pods for now: a
// node.kubernetes.io/ taint (not-ready, unreachable, memory-pressure,
// unschedulable, ...: the node lifecycle controller's, which come and go
// with the node's health and cordon), not Ready, or cordoned. ok when
// none does.
func nodeHealth(n *NodeFacts, req GPURequest) (nodeReason, string, bool) {
	if t := untoleratedTaint(n.Taints, req.Tolerations, true); t != nil {
		if t.Key == corev1.TaintNodeUnschedulable {
			return reasonCordoned, "", false
		}
		return reasonNotReady, formatTaint(t), false
	}
	if !n.Ready {
		return reasonNotReady, "", false
	}
	if t := untoleratedGPUUnhealthyTaint(n.Taints, req.Tolerations); t != nil {
		return reasonGPUUnhealthy, formatTaint(t), false
	}
	// The scheduler's NodeUnschedulable filter lets a pod that tolerates
	// the unschedulable taint onto a cordoned node.
	if !n.Schedulable && !tolerates(req.Tolerations, &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}) {
		return reasonCordoned, "", false
	}
	return 0, "", true
}

// labelMismatch checks the GPU criteria that required node affinity on GFD
// labels enforces: product, memory, compute capability. reason is
// reasonCount when the node meets them all; unlabeled says the label was
// missing rather than contradicting.
func labelMismatch(n *NodeFacts, req GPURequest) (reason nodeReason, detail string, unlabeled bool) {
	if len(req.Products) > 0 && !productMatches(n.Product, req) {
		return reasonProduct, orUnlabeled(n.Product), n.Product == ""
	}
	if req.MinMemoryMiB > 0 && n.MemoryMiB < req.MinMemoryMiB {
		if n.MemoryMiB == 0 {
			return reasonMemory, orUnlabeled(""), true
		}
		return reasonMemory, fmt.Sprintf("%d MiB", n.MemoryMiB), false
	}
	if req.MinCompute != nil {
		cc, err := ParseComputeCapability(n.ComputeCapability)
		if err != nil || !cc.AtLeast(*req.MinCompute) {
			return reasonCompute, orUnlabeled(n.ComputeCapability), n.ComputeCapability == ""
		}
	}
	if req.MinCUDA != nil {
		v, err := ParseCUDAVersion(n.CUDAVersion)
		if err != nil || !v.AtLeast(*req.MinCUDA) {
			return reasonCUDA, orUnlabeled(n.CUDAVersion), n.CUDAVersion == ""
		}
	}
	return reasonCount, "", false
}

// allocatableDetail is how much of resource n has, and what NVIDIA
// resources it advertises instead when it has none, e.g. "0; it
// advertises nvidia.com/gpu: 8".
func allocatableDetail(n *NodeFacts, resource corev1.ResourceName) string {
	detail := strconv.FormatInt(n.Allocatable, 10)
	if n.Allocatable > 0 || len(n.Advertised) == 0 {
		return detail
	}
	names := slices.Sorted(maps.Keys(n.Advertised))
	parts := make([]string, 0, len(names))
	for _, name := range names {
		if name != resource {
			parts = append(parts, fmt.Sprintf("%s: %d", name, n.Advertised[name]))
		}
	}
	if len(parts) == 0 {
		return detail
	}
	return detail + "; it advertises " + strings.Join(parts, ", ")
}

// productMatches accepts a node's product when it is one of the requested
// products, or, for a share of a time-sliced GPU, one of them with GFD's
// "-SHARED" suffix: the node affinity the workload's pods carry accepts
// exactly these.
func productMatches(product string, req GPURequest) bool {
	if slices.Contains(req.Products, product) {
		return true
	}
	return req.Resource == gpulabels.SharedResourceName && strings.HasSuffix(product, gpulabels.SharedProductSuffix) &&
		slices.Contains(req.Products, strings.TrimSuffix(product, gpulabels.SharedProductSuffix))
}

func orUnlabeled(s string) string {
	if s == "" {
		return "not labeled by GPU Feature Discovery"
	}
	return s
}

func formatTaint(t *corev1.Taint) string {
	detail := t.Key
	if t.Value != "" {
		detail += "=" + t.Value
	}
	return detail + ":" + string(t.Effect)
}

// untoleratedTaint returns the first NoSchedule or NoExecute taint that no
// toleration tolerates, as the scheduler's TaintToleration filter does,
// among the node lifecycle controller's node.kubernetes.io/ taints
// (lifecycle true) or among the others. The GPU health agent's
// gpu-unhealthy taint is neither: it comes and goes with a GPU fault
// (untoleratedGPUUnhealthyTaint).
func untoleratedTaint(taints []corev1.Taint, tolerations []corev1.Toleration, lifecycle bool) *corev1.Taint {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule || strings.HasPrefix(t.Key, "node.kubernetes.io/") != lifecycle || t.Key == gpuhealth.TaintKey {
			continue
		}
		if !tolerates(tolerations, t) {
			return t
		}
	}
	return nil
}

// untoleratedGPUUnhealthyTaint returns the GPU health agent's taint
// (gpuhealth.TaintKey, NoSchedule while a fatal GPU fault stands) when the
// pod does not tolerate it.
func untoleratedGPUUnhealthyTaint(taints []corev1.Taint, tolerations []corev1.Toleration) *corev1.Taint {
	for i := range taints {
		t := &taints[i]
		if t.Key == gpuhealth.TaintKey && t.Effect != corev1.TaintEffectPreferNoSchedule && !tolerates(tolerations, t) {
			return t
		}
	}
	return nil
}

// tolerates is the scheduler's TaintToleration rule. The comparison
// operators (Gt/Lt, feature gate TaintTolerationComparisonOperators) are
// alpha and off by default through Kubernetes 1.37, so they are off here.
func tolerates(tolerations []corev1.Toleration, t *corev1.Taint) bool {
	return slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool {
		return tol.ToleratesTaint(klog.Background(), t, false)
	})
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
	case reasonNoDevicePlugin:
		return verb("is a GPU node", "are GPU nodes") + " where no NVIDIA device plugin runs, so " + verb("it advertises", "they advertise") + " no " + gpulabels.ResourceName
	case reasonProduct:
		return verb("is", "are") + " not in gpu.products [" + strings.Join(req.Products, ", ") + "]"
	case reasonMemory:
		return verb("has", "have") + " less than gpu.min_memory_gib " + formatGiB(req.MinMemoryMiB) + " GiB per GPU"
	case reasonCompute:
		return verb("has", "have") + " a compute capability below gpu.min_compute_capability " + req.MinCompute.String()
	case reasonCUDA:
		return verb("has a driver", "have drivers") + " below gpu.min_cuda_version " + req.MinCUDA.String()
	case reasonTaint:
		return verb("has", "have") + " a taint the workload does not tolerate (add it to tolerations)"
	case reasonPluginStarting:
		return verb("runs a device plugin pod but advertises", "run a device plugin pod but advertise") + " no " + gpulabels.ResourceName + " yet"
	case reasonNotReady:
		return verb("is", "are") + " not Ready"
	case reasonGPUUnhealthy:
		return verb("has", "have") + " a fatal GPU fault: the GPU health agent's taint " + gpuhealth.TaintKey +
			" keeps pods off until the fault clears (a GPU reset or reboot) or node repair replaces the node; " +
			"do not tolerate it, the pod would land on the broken GPU"
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
