package kube

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// ResourceGPU is the extended resource NVIDIA's device plugin advertises.
const ResourceGPU corev1.ResourceName = gpulabels.ResourceName

// podGPURequest is what the scheduler counts against a node for one pod: the
// larger of the app containers (plus restartable "sidecar" init containers)
// and the largest ordinary init container, as in the Kubernetes resource
// model. Requests default to limits for extended resources.
func podGPURequest(pod *corev1.Pod) int64 {
	return podResourceRequest(pod, ResourceGPU)
}

// podResourceRequest is podGPURequest for any extended resource, e.g.
// nvidia.com/gpu.shared or nvidia.com/mig-1g.10gb.
func podResourceRequest(pod *corev1.Pod, name corev1.ResourceName) int64 {
	var running, sidecars, initPeak int64
	for i := range pod.Spec.Containers {
		running += containerResourceRequest(&pod.Spec.Containers[i], name)
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		req := containerResourceRequest(c, name)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars += req
			continue
		}
		initPeak = max(initPeak, sidecars+req)
	}
	return max(running+sidecars, initPeak)
}

func containerResourceRequest(c *corev1.Container, name corev1.ResourceName) int64 {
	if q, ok := c.Resources.Requests[name]; ok {
		return q.Value()
	}
	if q, ok := c.Resources.Limits[name]; ok {
		return q.Value()
	}
	return 0
}
