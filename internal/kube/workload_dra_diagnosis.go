package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// diagnoseDRA is Diagnose for a DRA workload's pod: every node is checked
// against the pod's claim as the scheduler's DRA plugin would (does the
// node publish NVIDIA devices, do enough of them meet some choice, are
// those free), besides node_selector, taints and the node's health. A
// node none of whose devices can ever meet a choice says which constraint
// fails; a node whose matching devices are all allocated says to whom.
// It returns the node facts too.
func (c *Cluster) diagnoseDRA(ctx context.Context, spec WorkloadSpec) (Diagnosis, []NodeFacts, error) {
	facts, err := c.ReadDRAFacts(ctx, true)
	if err != nil {
		return Diagnosis{}, nil, err
	}
	nodes, err := c.nodeFacts(ctx, ResourceGPU)
	if err != nil {
		return Diagnosis{}, nil, err
	}
	d, err := diagnoseDRA(ctx, facts, nodes, spec)
	return d, nodes, err
}

func diagnoseDRA(ctx context.Context, facts DRAFacts, nodes []NodeFacts, spec WorkloadSpec) (Diagnosis, error) {
	g := spec.Pod.GPU
	req := spec.GPURequest()
	var matchers []*choiceMatcher
	for _, choice := range g.Choices() {
		m, err := newChoiceMatcher(facts, choice, g.MinCUDA)
		if err != nil {
			return Diagnosis{}, err
		}
		matchers = append(matchers, m)
	}
	_, byNode := facts.nodeDevices()
	d := Diagnosis{Nodes: len(nodes)}
	type entry struct{ node, detail string }
	groups := make([][]entry, reasonCount)
	for i := range nodes {
		n := &nodes[i]
		devices := byNode[n.Name]
		if len(devices) > 0 {
			d.Advertising++
		}
		reason, detail, ok := checkDRANode(ctx, n, devices, matchers, req)
		if ok {
			d.Fit = append(d.Fit, n.Name)
			continue
		}
		groups[reason] = append(groups[reason], entry{n.Name, detail})
	}
	for r := range reasonCount {
		entries := groups[r]
		if len(entries) == 0 {
			continue
		}
		g := ReasonGroup{Phrase: draReasonPhrase(r, req, len(entries) == 1), Transient: r.transient(), reason: r}
		for _, e := range entries {
			g.Nodes = append(g.Nodes, e.node)
			if e.detail != "" {
				g.Details = append(g.Details, e.node+": "+e.detail)
			}
		}
		d.Groups = append(d.Groups, g)
	}
	return d, nil
}

// checkDRANode finds why node n, with the NVIDIA devices it publishes,
// cannot take the pod, or ok; permanent reasons first, as checkNode.
// reasonAllocatable stands for "no choice can ever be met here",
// reasonBusy for "the devices that meet a choice are allocated".
func checkDRANode(ctx context.Context, n *NodeFacts, devices []*DRADevice, matchers []*choiceMatcher, req GPURequest) (nodeReason, string, bool) {
	if len(devices) == 0 {
		return reasonNoGPU, "", false
	}
	for k, v := range req.NodeSelector {
		if got, ok := n.Labels[k]; !ok || got != v {
			return reasonNodeSelector, "", false
		}
	}
	if t := untoleratedTaint(n.Taints, req.Tolerations, false); t != nil {
		return reasonTaint, formatTaint(t), false
	}
	var never, busy []string
	anyFree := false
	for i, m := range matchers {
		var matching []*DRADevice
		failures := make([]int, len(m.exprs)+1)
		for _, dev := range devices {
			if f := m.failing(ctx, dev); f >= 0 {
				failures[f]++
			} else {
				matching = append(matching, dev)
			}
		}
		label := fmt.Sprintf("choice %d (%s)", i+1, describeChoice(m.choice, nil))
		if int64(len(matching)) < m.choice.Count {
			s := fmt.Sprintf("%s: %d of %d devices match", label, len(matching), len(devices))
			if unmet := mostFailed(m, failures, len(devices)); unmet != "" {
				s += ", failing " + unmet
			}
			never = append(never, s)
			continue
		}
		var free int64
		var holders []string
		for _, dev := range matching {
			if dev.AllocatedTo == "" {
				free++
			} else if !slices.Contains(holders, dev.AllocatedTo) {
				holders = append(holders, dev.AllocatedTo)
			}
		}
		if free >= m.choice.Count {
			anyFree = true
			continue
		}
		busy = append(busy, fmt.Sprintf("%s: %d of %d matching devices free, the others allocated to %s", label, free, len(matching), strings.Join(holders, ", ")))
	}
	if len(busy) == 0 && !anyFree {
		return reasonAllocatable, strings.Join(never, "; ") + "; it has " + describeDevices(devices), false
	}
	if reason, detail, ok := nodeHealth(n, req); !ok {
		return reason, detail, false
	}
	if !anyFree {
		return reasonBusy, strings.Join(busy, "; "), false
	}
	return 0, "", true
}

func draReasonPhrase(r nodeReason, req GPURequest, one bool) string {
	n := 2
	if one {
		n = 1
	}
	switch r {
	case reasonNoGPU:
		return isAre(n, "publishes", "publish") + " no NVIDIA DRA devices (no ResourceSlices of driver gpu.nvidia.com)"
	case reasonAllocatable:
		return isAre(n, "has", "have") + " no devices that can ever meet a choice of the claim"
	case reasonBusy:
		return isAre(n, "has its", "have their") + " matching devices allocated to other claims"
	}
	return reasonPhrase(r, req, one)
}
