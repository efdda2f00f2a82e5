package kube

// This file owns whether a DaemonSet places a pod on a node, as its
// controller decides: the pod template's nodeSelector, its required node
// affinity, and its tolerations against the node's NoSchedule and
// NoExecute taints (the controller itself tolerates the node lifecycle
// controller's node.kubernetes.io/ taints, so those are left out).

import (
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// daemonSetSkips says why ds places no pod on node ("its nodeSelector
// wants label a=b, which the node lacks", "it does not tolerate the
// node's taint k=v:NoSchedule"), or "" when it places one there.
func daemonSetSkips(ds *appsv1.DaemonSet, node *corev1.Node) string {
	spec := &ds.Spec.Template.Spec
	for _, k := range slices.Sorted(maps.Keys(spec.NodeSelector)) {
		want := spec.NodeSelector[k]
		got, ok := node.Labels[k]
		switch {
		case !ok:
			return fmt.Sprintf("its nodeSelector wants label %s=%s, which the node lacks", k, want)
		case got != want:
			return fmt.Sprintf("its nodeSelector wants label %s=%s, the node has %s=%s", k, want, k, got)
		}
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		if !nodeSelectorMatches(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, node) {
			return "its required node affinity matches none of the node's labels"
		}
	}
	if t := untoleratedTaint(node.Spec.Taints, spec.Tolerations, false); t != nil {
		return "it does not tolerate the node's taint " + formatTaint(t)
	}
	return ""
}

// nodeSelectorMatches reports whether node matches one of sel's terms
// (they are ORed; a term's requirements are ANDed, and an empty term
// matches nothing), as the scheduler reads required node affinity.
func nodeSelectorMatches(sel *corev1.NodeSelector, node *corev1.Node) bool {
	return slices.ContainsFunc(sel.NodeSelectorTerms, func(term corev1.NodeSelectorTerm) bool {
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			return false
		}
		for _, r := range term.MatchExpressions {
			if !requirementMatches(r, labels.Set(node.Labels)) {
				return false
			}
		}
		for _, r := range term.MatchFields {
			if !nameMatches(r, node.Name) {
				return false
			}
		}
		return true
	})
}

// nameMatches reports whether a matchFields requirement holds for the node
// called name: the scheduler supports metadata.name with In and NotIn only.
// (Node names may be longer than a label value, so no label selector.)
func nameMatches(r corev1.NodeSelectorRequirement, name string) bool {
	if r.Key != "metadata.name" {
		return false
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return len(r.Values) == 1 && r.Values[0] == name
	case corev1.NodeSelectorOpNotIn:
		return len(r.Values) == 1 && r.Values[0] != name
	}
	return false
}

// nodeSelectorOperators maps node affinity's operators to label selection's.
var nodeSelectorOperators = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn:           selection.In,
	corev1.NodeSelectorOpNotIn:        selection.NotIn,
	corev1.NodeSelectorOpExists:       selection.Exists,
	corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt:           selection.GreaterThan,
	corev1.NodeSelectorOpLt:           selection.LessThan,
}

// requirementMatches reports whether set meets r; an invalid requirement
// (an unknown operator, In without values) meets nothing, as the
// scheduler treats it.
func requirementMatches(r corev1.NodeSelectorRequirement, set labels.Set) bool {
	op, ok := nodeSelectorOperators[r.Operator]
	if !ok {
		return false
	}
	req, err := labels.NewRequirement(r.Key, op, r.Values)
	if err != nil {
		return false
	}
	return req.Matches(set)
}
