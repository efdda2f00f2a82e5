package kube

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
)

// The inventory's GPU health rule: what a node's health agent reports
// (condition gpuhealth.ConditionType and annotation
// gpuhealth.AnnotationUnhealthyGPUs, read by gpuhealth.ReadNode and by
// nothing else) takes GPUs out of GPUNode.Free, never out of Count,
// Allocatable or Allocated, which stay what the kubelet and the
// ResourceClaims say:
//
//   - a GPU the annotation lists is not free. Device plugin: the node's
//     usable nvidia.com/gpu is min(allocatable, (physical GPUs − listed
//     GPUs) × shares per GPU), where physical GPUs is GFD's
//     nvidia.com/gpu.count (else capacity ÷ shares) and shares per GPU is
//     GFD's nvidia.com/gpu.replicas (time-slicing; 1 without). The minimum
//     keeps a device plugin that already dropped the GPU from allocatable
//     from being counted twice. Free = max(0, usable − allocated). DRA: the
//     devices whose uuid (or, for a MIG device, parentUUID) or PCI bus ID
//     the annotation lists are not free; a listed GPU that matches no
//     published device takes one whole GPU off free.
//   - condition False with no GPU listed (a fault of the node, such as a
//     device count mismatch) makes the node's free 0.
//   - True, Unknown or no condition at all changes nothing.

// NodeGPUHealth is a node's GPU health as its health agent reports it.
type NodeGPUHealth = gpuhealth.NodeHealth

// gpuLabelCounts are the GFD labels the device-plugin rule needs.
type gpuLabelCounts struct {
	physical int64 // nvidia.com/gpu.count; 0 when unlabeled
	replicas int64 // nvidia.com/gpu.replicas; 0 when unlabeled
}

// faultWithoutGPU says the node's condition is False and names no GPU: no
// GPU of it is free.
func faultWithoutGPU(h NodeGPUHealth) bool {
	return h.Reported && h.Status == corev1.ConditionFalse && len(h.Unhealthy) == 0
}

// unhealthyGPUCount is how many distinct GPUs h lists (an agent lists a GPU
// once, by index; duplicates are counted once).
func unhealthyGPUCount(h NodeGPUHealth) int64 {
	seen := map[gpuhealth.GPURef]bool{}
	for _, g := range h.Unhealthy {
		seen[g.GPURef] = true
	}
	return int64(len(seen))
}

// devicePluginFree is a device-plugin node's free nvidia.com/gpu under the
// health rule above.
func (n *GPUNode) devicePluginFree(labels gpuLabelCounts) int64 {
	usable := n.Allocatable
	switch {
	case faultWithoutGPU(n.Health):
		return 0
	case len(n.Health.Unhealthy) > 0:
		shares := max(labels.replicas, 1)
		physical := labels.physical
		if physical <= 0 {
			physical = max(n.Count, n.Allocatable) / shares
		}
		healthy := max(physical-unhealthyGPUCount(n.Health), 0)
		usable = min(n.Allocatable, healthy*shares)
	}
	return max(usable-n.Allocated, 0)
}

// unhealthyDevices matches the GPUs the health agent lists with the node's
// DRA devices: which devices are unhealthy, and how many listed GPUs match
// no device (those still take a whole GPU off free).
func unhealthyDevices(h NodeGPUHealth, devices []*draDevice) (unhealthy map[*draDevice]bool, unmatched int64) {
	if len(h.Unhealthy) == 0 {
		return nil, 0
	}
	unhealthy = map[*draDevice]bool{}
	for _, g := range h.Unhealthy {
		matched := false
		for _, d := range devices {
			if (g.UUID != "" && (d.uuid == g.UUID || d.parentUUID == g.UUID)) ||
				(g.PCIBusID != "" && d.pciBusID != "" && samePCIBusID(d.pciBusID, g.PCIBusID)) {
				unhealthy[d] = true
				matched = true
			}
		}
		if !matched {
			unmatched++
		}
	}
	return unhealthy, unmatched
}

// samePCIBusID compares PCI addresses as NVML ("00000000:9A:00.0") and
// sysfs or NVIDIA's DRA driver ("0000:9a:00.0") write them: case and the
// domain's leading zeros aside.
func samePCIBusID(a, b string) bool { return normalPCIBusID(a) == normalPCIBusID(b) }

func normalPCIBusID(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	domain, rest, ok := strings.Cut(s, ":")
	if !ok || strings.Count(rest, ":") != 1 {
		return s
	}
	domain = strings.TrimLeft(domain, "0")
	return domain + ":" + rest
}
