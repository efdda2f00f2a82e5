package eks

import (
	"maps"
	"strconv"
	"strings"
)

// Cluster-autoscaler reads these Auto Scaling group tags to know what a node
// of an empty group (scaled to zero) would look like: its labels, taints and
// extended resources. EKS does not set them for managed node groups.
const (
	nodeTemplatePrefix      = "k8s.io/cluster-autoscaler/node-template/"
	nodeTemplateLabelPrefix = "k8s.io/cluster-autoscaler/node-template/label/"
	nodeTemplateTaintPrefix = "k8s.io/cluster-autoscaler/node-template/taint/"
	nodeTemplateGPUResource = "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"
)

// NodeTemplateTags returns the cluster-autoscaler node-template tags for a
// node group with these labels, taints (EKS effect names) and GPUs per node:
//
//	k8s.io/cluster-autoscaler/node-template/label/<key> = <value>
//	k8s.io/cluster-autoscaler/node-template/taint/<key> = <value>:<NoSchedule|NoExecute|PreferNoSchedule>
//	k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu = <n> (when n > 0)
func NodeTemplateTags(labels map[string]string, taints []Taint, gpusPerNode int) map[string]string {
	tags := make(map[string]string, len(labels)+len(taints)+1)
	for k, v := range labels {
		tags[nodeTemplateLabelPrefix+k] = v
	}
	for _, t := range taints {
		tags[nodeTemplateTaintPrefix+t.Key] = t.Value + ":" + KubernetesTaintEffect(t.Effect)
	}
	if gpusPerNode > 0 {
		tags[nodeTemplateGPUResource] = strconv.Itoa(gpusPerNode)
	}
	return tags
}

// KubernetesTaintEffect turns an EKS taint effect ("NO_SCHEDULE") into
// Kubernetes' ("NoSchedule"); an unknown value is returned unchanged.
func KubernetesTaintEffect(eksEffect string) string {
	switch eksEffect {
	case "NO_SCHEDULE":
		return "NoSchedule"
	case "NO_EXECUTE":
		return "NoExecute"
	case "PREFER_NO_SCHEDULE":
		return "PreferNoSchedule"
	}
	return eksEffect
}

// commonNodeTemplateTags is the node-template tags every one of the groups'
// tag sets carries with the same value: a tag missing on one group, or
// different, is left out (so that a plan sets it again); other tags (EKS's,
// the user's) are not node-template tags.
func commonNodeTemplateTags(groups []map[string]string) map[string]string {
	out := map[string]string{}
	for i, tags := range groups {
		if i == 0 {
			maps.Copy(out, tags)
			maps.DeleteFunc(out, func(k, _ string) bool { return !strings.HasPrefix(k, nodeTemplatePrefix) })
			continue
		}
		maps.DeleteFunc(out, func(k, v string) bool { return tags[k] != v })
	}
	return out
}

// Auto Scaling allows 50 tags per Auto Scaling group (Amazon EC2 Auto
// Scaling User Guide, "Quotas": tags per Auto Scaling group), and EKS puts
// its own on a managed node group's group before ours: eks:cluster-name,
// eks:nodegroup-name, k8s.io/cluster-autoscaler/enabled,
// k8s.io/cluster-autoscaler/<cluster> and kubernetes.io/cluster/<cluster>.
const (
	MaxAutoScalingGroupTags = 50
	EKSAutoScalingGroupTags = 5
)

// NodeTemplateTagRoom is how many node-template tags fit on a managed node
// group's Auto Scaling group beside EKS's own.
const NodeTemplateTagRoom = MaxAutoScalingGroupTags - EKSAutoScalingGroupTags
