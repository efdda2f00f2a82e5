package kube

// This file ends a gpus_allocatable wait early when it cannot succeed as
// configured: a Ready node of the group carries a taint the group itself
// sets (it stays for the node's life), and every NVIDIA device plugin
// DaemonSet that selects the node by its labels does not tolerate it, so
// no device plugin pod will ever run there and its GPUs are never
// advertised. Without this the wait would run to its timeout (45 minutes
// and more) to say the same.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ErrNoDevicePluginCanRun is the cause of a *NodeGroupWaitError that ended
// early: no NVIDIA device plugin pod can run on a node of the group.
var ErrNoDevicePluginCanRun = errors.New("no NVIDIA device plugin pod can run on the group's nodes")

// blockedDevicePlugin checks node, once it is Ready, schedulable and short
// of GPUs, against the cluster's NVIDIA device plugin DaemonSets. It
// returns "" when a pod could run there, when there is no such DaemonSet
// (one may be created yet), when one skips the node for another reason
// than a taint (labels may arrive later), or when they cannot be read;
// else the diagnosis line: "no NVIDIA device plugin pod can run on node
// X: DaemonSet ns/name does not tolerate its taint k=v:NoSchedule", and
// the taints to tolerate.
func blockedDevicePlugin(ctx context.Context, c *Cluster, w NodeGroupWait, node *corev1.Node) (string, []string) {
	if w.Until != NodeGroupGPUsAllocatable || len(w.TaintKeys) == 0 || !nodeReady(node) || node.Spec.Unschedulable ||
		quantity(node.Status.Allocatable, ResourceGPU) >= int64(w.GPUsPerNode) {
		return "", nil
	}
	groupTaints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool {
		return !slices.Contains(w.TaintKeys, t.Key)
	})
	if len(groupTaints) == 0 {
		return "", nil
	}
	p := readDevicePluginPlacement(ctx, c.client)
	if p.err != nil || len(p.daemonSets) == 0 {
		return "", nil
	}
	var reasons, taints []string
	for _, ds := range p.daemonSets {
		if daemonSetSkips(ds, node) == "" {
			return "", nil // a pod can run there: its GPUs may yet come
		}
		spec := &ds.Spec.Template.Spec
		labelsOnly := *ds
		labelsOnly.Spec.Template.Spec.Tolerations = append(slices.Clone(spec.Tolerations), corev1.Toleration{Operator: corev1.TolerationOpExists})
		if daemonSetSkips(&labelsOnly, node) != "" {
			continue // skips the node by its labels: meant for other nodes
		}
		t := untoleratedTaint(groupTaints, spec.Tolerations, false)
		if t == nil {
			return "", nil // skipped for a taint the group does not set: may go
		}
		reasons = append(reasons, fmt.Sprintf("DaemonSet %s/%s does not tolerate its taint %s", ds.Namespace, ds.Name, formatTaint(t)))
		if !slices.Contains(taints, formatTaint(t)) {
			taints = append(taints, formatTaint(t))
		}
	}
	if len(reasons) == 0 {
		return "", nil // no device plugin meant for this node: one may be created yet
	}
	return fmt.Sprintf("no NVIDIA device plugin pod can run on node %s: %s", node.Name, strings.Join(reasons, "; ")), taints
}

// blockedFix is what a node whose device plugin does not tolerate taints
// needs.
func blockedFix(taints []string) string {
	return "Fix: add a toleration for " + strings.Join(taints, ", ") + " to the device plugin (gpu_device_plugin's tolerations), " +
		"or remove the taint from the node group, or use a Bottlerocket NVIDIA AMI, whose OS runs the device plugin."
}
