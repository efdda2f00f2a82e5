package kube

import (
	"context"
	"fmt"
	"strings"
)

// DRAPlacement is what the devices NVIDIA's DRA driver publishes say about
// a DRA gpu request, whoever holds them now: which nodes have enough
// devices for each choice. It is the plan-time check of a DRA workload.
type DRAPlacement struct {
	Choices []ChoicePlacement
	// Nodes are the nodes that publish NVIDIA devices, in name order, and
	// Devices says what each has ("8× NVIDIA A100-SXM4-40GB (40Gi, ...)").
	Nodes   []string
	Devices map[string]string
	// CUDA is the CUDA version each node's devices publish ("12.8").
	CUDA map[string]string
}

// ChoicePlacement is one choice of a request and the nodes that have
// enough devices for it.
type ChoicePlacement struct {
	Description string   // "2 GPUs of NVIDIA-A100-SXM4-80GB"
	Nodes       []string // nodes with at least Count matching devices
	// Unmet is the constraint most devices fail when no node has enough,
	// e.g. a CEL expression, with how many of all devices fail it.
	Unmet string
}

// PlaceDRA reads the NVIDIA devices and DeviceClasses and checks each of
// g's choices against them. An error means the devices could not be read
// or the driver's DeviceClass is missing (it says so).
func (c *Cluster) PlaceDRA(ctx context.Context, g WorkloadGPU) (DRAPlacement, error) {
	if err := c.RequireDRA(ctx); err != nil {
		return DRAPlacement{}, err
	}
	facts, err := c.ReadDRAFacts(ctx, false)
	if err != nil {
		return DRAPlacement{}, err
	}
	return placeDRA(ctx, facts, g)
}

func placeDRA(ctx context.Context, facts DRAFacts, g WorkloadGPU) (DRAPlacement, error) {
	nodes, byNode := facts.nodeDevices()
	p := DRAPlacement{Devices: map[string]string{}, CUDA: facts.DeviceCUDAVersions()}
	for _, n := range nodes {
		if n == "" {
			continue // devices not local to one node
		}
		p.Nodes = append(p.Nodes, n)
		p.Devices[n] = describeDevices(byNode[n])
	}
	for _, choice := range g.Choices() {
		m, err := newChoiceMatcher(facts, choice, g.MinCUDA)
		if err != nil {
			return p, err
		}
		cp := ChoicePlacement{Description: describeChoice(choice, g.MinCUDA)}
		failures := make([]int, len(m.exprs)+1)
		for _, n := range p.Nodes {
			matched := 0
			for _, d := range byNode[n] {
				if i := m.failing(ctx, d); i >= 0 {
					failures[i]++
				} else {
					matched++
				}
			}
			if int64(matched) >= choice.Count {
				cp.Nodes = append(cp.Nodes, n)
			}
		}
		if len(cp.Nodes) == 0 {
			cp.Unmet = mostFailed(m, failures, len(facts.Devices))
		}
		p.Choices = append(p.Choices, cp)
	}
	return p, nil
}

// mostFailed names the constraint that fails the most devices, e.g.
// "device.attributes['gpu.nvidia.com'].productName... (met by 0 of 16
// devices)"; "" when every device meets every constraint (too few per node).
func mostFailed(m *choiceMatcher, failures []int, devices int) string {
	worst := -1
	for i, n := range failures {
		if n > 0 && (worst < 0 || n > failures[worst]) {
			worst = i
		}
	}
	if worst < 0 {
		return ""
	}
	return fmt.Sprintf("%s (met by %d of %d devices)", m.constraint(worst), devices-failures[worst], devices)
}

// Satisfiable reports whether some node has enough devices for some choice.
func (p DRAPlacement) Satisfiable() bool {
	for _, c := range p.Choices {
		if len(c.Nodes) > 0 {
			return true
		}
	}
	return false
}

// Unsatisfiable says why no node can serve choice i (from 0), e.g. "no node
// has 2 GPUs of NVIDIA-A100-SXM4-80GB: ... The nodes have: gpu-0: 8×
// ...", or "" when some node can.
func (p DRAPlacement) Unsatisfiable(i int) string {
	c := p.Choices[i]
	if len(c.Nodes) > 0 {
		return ""
	}
	s := "No node has " + c.Description
	if c.Unmet != "" {
		s += "; the constraint most devices fail is " + c.Unmet
	}
	return s + ". " + p.NodesSummary()
}

// NodesSummary says what devices each node publishes, e.g. "The nodes
// have: gpu-0: 8× NVIDIA H100 80GB HBM3 (80Gi, compute 9.0, CUDA 12.8)."
func (p DRAPlacement) NodesSummary() string {
	if len(p.Nodes) == 0 {
		return "No node publishes NVIDIA DRA devices (ResourceSlices of driver gpu.nvidia.com): is NVIDIA's DRA driver running on the GPU nodes?"
	}
	parts := make([]string, 0, min(len(p.Nodes), maxNamedNodes))
	for _, n := range p.Nodes[:min(len(p.Nodes), maxNamedNodes)] {
		parts = append(parts, n+": "+p.Devices[n])
	}
	s := "The nodes have: " + strings.Join(parts, "; ")
	if more := len(p.Nodes) - maxNamedNodes; more > 0 {
		s += fmt.Sprintf("; and %d more nodes", more)
	}
	return s + "."
}
