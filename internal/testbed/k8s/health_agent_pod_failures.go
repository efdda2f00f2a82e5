package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
)

// What a fatal GPU fault does to the work on the node: the CUDA contexts on
// the GPU are lost and the applications die. kwok runs no containers and
// assigns no GPU to a pod, so the simulator fails every GPU pod Running on
// the node (not only those that would have had the faulted GPU) the way
// FailExitCodeAnnotation does: a pod with restartPolicy Never (a Job's)
// goes to phase Failed and its Job controller retries it, on another node
// once the agent's taint keeps new pods off this one; a pod with
// restartPolicy Always or OnFailure crash-loops, and keeps crash-looping
// after the GPU recovers, until it is deleted.
//
// Fatal here: a critical XID (gpuhealth.CriticalXID), a lost GPU and an
// uncorrectable ECC error, whatever the agent's --fatal says (that is what
// the agent reports, not what the GPU does).

// gpuFailureExitCode is how a CUDA application that meets a GPU fault
// usually ends: the framework raises the CUDA error and the uncaught
// exception ends Python with status 1.
const gpuFailureExitCode = "1"

// podFailure is the termination message of a GPU application that f
// kills, and whether f kills it.
func (f GPUFault) podFailure(node string) (string, bool) {
	var what string
	switch {
	case f.XID != 0 && gpuhealth.CriticalXID(f.XID):
		what = fmt.Sprintf("XID %d", f.XID)
		if meaning, ok := gpuhealth.XIDMeaning(f.XID); ok {
			what += " (" + meaning + ")"
		}
	case f.Lose:
		what = "the GPU fell off the bus (NVML: GPU is lost)"
	case f.ECCUncorrected > 0:
		what = fmt.Sprintf("%d uncorrectable ECC error(s)", f.ECCUncorrected)
	default:
		return "", false
	}
	return fmt.Sprintf("GPU %d of node %s failed under the application: %s\n", f.GPU, node, what), true
}

// failGPUPods fails the GPU pods Running on node with message; it logs the
// pods it cannot fail.
func (s *healthAgentSimulator) failGPUPods(ctx context.Context, node, message string) {
	objs, err := s.pods.pods.ByIndex(agentPodsByNode, node)
	if err != nil {
		s.pods.log("node %s: listing its pods to fail: %v", node, err)
		return
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		FailExitCodeAnnotation: gpuFailureExitCode,
		FailMessageAnnotation:  message,
	}}})
	if err != nil {
		return
	}
	for _, obj := range objs {
		pod, ok := obj.(*corev1.Pod)
		if !ok || !podRunning(pod) || !usesGPUs(pod) {
			continue
		}
		if _, failing := pod.Annotations[FailExitCodeAnnotation]; failing {
			continue
		}
		if _, err := s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			s.pods.log("node %s: failing GPU pod %s/%s: %v", node, pod.Namespace, pod.Name, err)
			continue
		}
		s.pods.log("node %s: GPU pod %s/%s fails: %s", node, pod.Namespace, pod.Name, strings.TrimSpace(message))
	}
}

// usesGPUs reports whether a pod has GPUs: a container asks for an NVIDIA
// resource (nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-*), or
// the pod has DRA resource claims (the testbed's DRA devices are GPUs).
func usesGPUs(pod *corev1.Pod) bool {
	if len(pod.Spec.ResourceClaims) > 0 {
		return true
	}
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range containers {
			for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
				for name := range list {
					if strings.HasPrefix(string(name), "nvidia.com/") {
						return true
					}
				}
			}
		}
	}
	return false
}
