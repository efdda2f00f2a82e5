package kube

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// nvidiaResourcePrefix is the domain of every resource NVIDIA's device
// plugins advertise: nvidia.com/gpu, nvidia.com/gpu.shared,
// nvidia.com/mig-<profile>, and the names a plugin config renames them to.
const nvidiaResourcePrefix = "nvidia.com/"

// advertisedNVIDIAResources is every nvidia.com/ resource the node has
// allocatable, zero amounts left out. A kubelet reports a device plugin's
// healthy devices as allocatable and keeps a plugin that has gone in
// capacity at 0 (or its old count for a grace period) with nothing
// allocatable, so allocatable is what says a plugin serves the node now.
func advertisedNVIDIAResources(node *corev1.Node) map[corev1.ResourceName]int64 {
	var out map[corev1.ResourceName]int64
	for name, q := range node.Status.Allocatable {
		if !strings.HasPrefix(string(name), nvidiaResourcePrefix) || q.Value() <= 0 {
			continue
		}
		if out == nil {
			out = map[corev1.ResourceName]int64{}
		}
		out[name] = q.Value()
	}
	return out
}

// gpuHardware says what tells that a node has NVIDIA GPUs, whether or not
// a device plugin advertises them: GPU Feature Discovery's product label,
// the GPU Operator's presence label, Node Feature Discovery's PCI vendor
// label (10de is NVIDIA), an instance type known to carry NVIDIA GPUs, or
// GPUs in capacity that none are allocatable of. It returns "" when
// nothing does.
func gpuHardware(node *corev1.Node) string {
	labels := node.Labels
	switch {
	case labels[gpulabels.Product] != "":
		return gpulabels.Product + "=" + labels[gpulabels.Product]
	case labels[gpulabels.Present] == "true":
		return gpulabels.Present + "=true"
	case labels[gpulabels.NFDPCIPresent] == "true":
		return gpulabels.NFDPCIPresent + "=true"
	}
	if t, ok := ec2catalog.Lookup(labels[gpulabels.InstanceType]); ok && t.HasGPU() {
		return fmt.Sprintf("instance type %s (%d %s)", t.Name, t.GPUCount, t.GPUProduct)
	}
	if q, ok := node.Status.Capacity[ResourceGPU]; ok && q.Value() > 0 {
		return fmt.Sprintf("%s capacity %d, none allocatable", ResourceGPU, q.Value())
	}
	return ""
}

// kubeletDevicePluginsDir is the directory under the kubelet's root
// (/var/lib/kubelet by default; k0s, microk8s and others move the root)
// where device plugins register over a unix socket.
const kubeletDevicePluginsDir = "device-plugins"

// isDevicePluginPod reports whether pod mounts the kubelet's device-plugins
// directory from the host, as every device plugin must to register: then
// a device plugin runs, or is starting, on its node.
func isDevicePluginPod(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.HostPath == nil {
			continue
		}
		p := path.Clean(v.HostPath.Path)
		if path.Base(p) == kubeletDevicePluginsDir || strings.Contains(p, "/"+kubeletDevicePluginsDir+"/") {
			return true
		}
	}
	return false
}
