package kube

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
)

// PodCapacity is how many pods of one GPURequest the nodes can hold at once
// with every GPU free, going by each node's allocatable GPUs alone: a node
// with A allocatable holds floor(A / count) pods, a node the pod cannot
// use (selector, products, memory, compute capability, taints, too few
// GPUs) none. It bounds a Deployment: replicas past it can never all run,
// whatever else frees its GPUs. CPU, memory and the pod limit per node are
// not counted, so the true bound may be lower, never higher.
type PodCapacity struct {
	Pods  int64          // on every node the pod can use, those cordoned or not Ready included
	Nodes []NodeCapacity // the nodes that hold at least one pod, most first
	// Unknown names the nodes whose device plugin is starting: what they
	// will advertise is not known yet, so Pods is no bound while any is.
	Unknown []string
}

// NodeCapacity is how many pods of a request one node holds.
type NodeCapacity struct {
	Name        string
	Pods        int64
	Allocatable int64
	Away        string // "cordoned", "not Ready" or "tainted gpu.gpuinfra.io/gpu-unhealthy" when the node cannot take pods now, else ""
}

// Bounded reports whether Pods is a true upper bound: no node's capacity is
// still unknown.
func (c PodCapacity) Bounded() bool { return len(c.Unknown) == 0 }

// Now is how many pods the nodes that are Ready and uncordoned hold.
func (c PodCapacity) Now() int64 {
	var pods int64
	for _, n := range c.Nodes {
		if n.Away == "" {
			pods += n.Pods
		}
	}
	return pods
}

// CapacityFor counts how many pods of req the nodes hold at once (see
// PodCapacity). It applies Diagnose's checks, less the free GPUs.
func CapacityFor(nodes []NodeFacts, req GPURequest) PodCapacity {
	var c PodCapacity
	if req.Count <= 0 {
		return c
	}
	for i := range nodes {
		n := &nodes[i]
		reason, _, fits := checkNode(n, req)
		away := ""
		switch {
		case fits || reason == reasonBusy:
		case reason == reasonNotReady:
			away = "not Ready"
		case reason == reasonCordoned:
			away = "cordoned"
		case reason == reasonGPUUnhealthy:
			away = "tainted " + gpuhealth.TaintKey
		case reason == reasonPluginStarting:
			c.Unknown = append(c.Unknown, n.Name)
			continue
		default:
			continue
		}
		pods := n.Allocatable / req.Count
		c.Pods += pods
		c.Nodes = append(c.Nodes, NodeCapacity{Name: n.Name, Pods: pods, Allocatable: n.Allocatable, Away: away})
	}
	slices.SortStableFunc(c.Nodes, func(a, b NodeCapacity) int { return cmp.Compare(b.Pods, a.Pods) })
	return c
}

// describe lists the nodes and how many pods each holds, most first, e.g.
// "gpu-p5-0: 2 (8 nvidia.com/gpu allocatable), gpu-p4d-0: 2 (8
// nvidia.com/gpu allocatable; cordoned)".
func (c PodCapacity) describe(req GPURequest) string {
	parts := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		var notes []string
		if req.Count > 1 {
			notes = append(notes, fmt.Sprintf("%d %s allocatable", n.Allocatable, req.Resource))
		}
		if n.Away != "" {
			notes = append(notes, n.Away)
		}
		parts[i] = fmt.Sprintf("%s: %d", n.Name, n.Pods)
		if len(notes) > 0 {
			parts[i] += " (" + strings.Join(notes, "; ") + ")"
		}
	}
	return nameList(parts)
}

// ReplicasBeyondCapacity says why replicas pods of req can never all run at
// once, or "" when they can or the bound is not known yet. It names what
// one replica needs, what each usable node holds, and how many replicas
// are left over.
func ReplicasBeyondCapacity(c PodCapacity, req GPURequest, replicas int64) string {
	if !c.Bounded() || replicas <= c.Pods {
		return ""
	}
	missing := replicas - c.Pods
	held := "no node can take one"
	if len(c.Nodes) > 0 {
		held = c.describe(req)
	}
	return fmt.Sprintf("deployment.replicas is %d, but the nodes its pods can use hold at most %d %s of %d %s at once, even with every GPU free (%s), so %d %s can never be scheduled",
		replicas, c.Pods, plural(c.Pods, "replica", "replicas"), req.Count, req.Resource, held, missing, plural(missing, "replica", "replicas"))
}

// ReplicasWaitingForNodes says that replicas pods fit only once nodes that
// are cordoned or not Ready come back, or "" when the nodes that take
// pods now hold them all.
func ReplicasWaitingForNodes(c PodCapacity, req GPURequest, replicas int64) string {
	now := c.Now()
	if replicas <= now || replicas > c.Pods {
		return ""
	}
	var away []string
	for _, n := range c.Nodes {
		if n.Away != "" {
			away = append(away, n.Name+" ("+n.Away+")")
		}
	}
	return fmt.Sprintf("The nodes that take pods now hold %d of its %d replicas (%s); the rest run once %s %s pods again",
		now, replicas, c.describe(req), nameList(away), isAre(len(away), "takes", "take"))
}

func plural(n int64, singular, many string) string {
	if n == 1 {
		return singular
	}
	return many
}
