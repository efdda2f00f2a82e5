package kube

import "strings"

// LabelKeep says which of a node's labels the inventory keeps in
// GPUNode.Labels. The zero value keeps none: at 5,000 nodes the labels are
// most of what Terraform would otherwise decode, diff and render
// (issue 10), so they are opt-in.
type LabelKeep struct {
	// All keeps every label, as the inventory did before labels were opt-in.
	All bool
	// Keys are label keys kept when present, e.g. "nvidia.com/gpu.product".
	Keys []string
	// Prefixes keep every label whose key starts with one of them, e.g.
	// "nvidia.com/" or "feature.node.kubernetes.io/pci-".
	Prefixes []string
}

// None reports whether k keeps no label at all.
func (k LabelKeep) None() bool { return !k.All && len(k.Keys) == 0 && len(k.Prefixes) == 0 }

// Select returns the labels k keeps: nil when it keeps none, labels itself
// (not a copy) when it keeps all, otherwise a new map, empty when the node
// has none of the kept keys.
func (k LabelKeep) Select(labels map[string]string) map[string]string {
	switch {
	case k.None():
		return nil
	case k.All:
		return labels
	}
	kept := map[string]string{}
	for _, key := range k.Keys {
		if v, ok := labels[key]; ok {
			kept[key] = v
		}
	}
	if len(k.Prefixes) > 0 {
		for key, v := range labels {
			for _, p := range k.Prefixes {
				if strings.HasPrefix(key, p) {
					kept[key] = v
					break
				}
			}
		}
	}
	return kept
}
