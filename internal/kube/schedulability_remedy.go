package kube

import (
	"fmt"
	"strings"
)

// Remedy says what would let a pod that no node can ever take run: deploy
// the NVIDIA device plugin where GPU nodes advertise no GPUs, otherwise
// change the workload or add nodes. It is meant for a Diagnosis whose
// CouldEverFit is false.
func (d Diagnosis) Remedy() string {
	change := "Change the gpu block (products, min_memory_gib, min_compute_capability, count), node_selector or tolerations, or add nodes that match."
	g := d.group(reasonNoDevicePlugin)
	if g == nil {
		return change
	}
	var b strings.Builder
	if d.Advertising == 0 {
		fmt.Fprintf(&b, "No node of the cluster advertises nvidia.com/gpu: no NVIDIA device plugin runs on its %s (%s).", countNoun(len(g.Nodes), "GPU node"), nameList(g.Nodes))
	} else {
		fmt.Fprintf(&b, "No NVIDIA device plugin runs on %s (%s).", countNoun(len(g.Nodes), "GPU node"), nameList(g.Nodes))
	}
	b.WriteString(" Deploy one with a gpu_device_plugin resource (its node_selector and tolerations must reach those nodes) and add it to this workload's depends_on.")
	if d.onlyExcludedFor(reasonNoGPU, reasonNoDevicePlugin) {
		return b.String()
	}
	return b.String() + " Otherwise c" + strings.TrimPrefix(change, "C")
}

// onlyExcludedFor reports whether every node that cannot take the pod is
// excluded for one of reasons.
func (d Diagnosis) onlyExcludedFor(reasons ...nodeReason) bool {
	for _, g := range d.Groups {
		found := false
		for _, r := range reasons {
			found = found || g.reason == r
		}
		if !found {
			return false
		}
	}
	return true
}

// WaitingFor says what a pod that waits to be scheduled waits for, from the
// transient groups: GPUs to be freed, nodes to come back or be uncordoned,
// device plugins to advertise GPUs; "" when nothing transient holds it.
// It is true of a Job's pods and of a Deployment's replicas within what
// the nodes can hold (see PodCapacity); past that, no wait helps.
func (d Diagnosis) WaitingFor() string {
	var waits []string
	if g := d.group(reasonBusy); g != nil {
		waits = append(waits, "GPUs are freed on "+nameList(g.Nodes))
	}
	if g := d.group(reasonNotReady); g != nil {
		waits = append(waits, nameList(g.Nodes)+" "+isAre(len(g.Nodes), "is", "are")+" Ready again")
	}
	if g := d.group(reasonGPUUnhealthy); g != nil {
		waits = append(waits, "the GPU fault on "+nameList(g.Nodes)+" clears or node repair replaces "+isAre(len(g.Nodes), "it", "them"))
	}
	if g := d.group(reasonCordoned); g != nil {
		waits = append(waits, nameList(g.Nodes)+" "+isAre(len(g.Nodes), "is", "are")+" uncordoned")
	}
	if g := d.group(reasonPluginStarting); g != nil {
		waits = append(waits, "the device plugin on "+nameList(g.Nodes)+" advertises GPUs")
	}
	switch len(waits) {
	case 0:
		return ""
	case 1:
		return waits[0]
	}
	return strings.Join(waits[:len(waits)-1], ", ") + " or " + waits[len(waits)-1]
}

func countNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func isAre(n int, singular, plural string) string {
	if n == 1 {
		return singular
	}
	return plural
}
