package k8s

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// isDRAKubeletPlugin reports whether pod runs NVIDIA's gpu-kubelet-plugin:
// a container named as the chart names it ("gpus") whose image is the
// chart's repository or a mirror of it (any registry and path, the last
// path element k8s-dra-driver-gpu), at any tag or digest. The chart's
// other containers on the same image (init-container, compute-domains)
// publish no GPUs and do not count.
func isDRAKubeletPlugin(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name == nvdra.KubeletPluginGPUsContainer && imageName(c.Image) == path.Base(nvdra.ImageRepository) {
			return true
		}
	}
	return false
}

// imageName is the last path element of an image reference's repository:
// "k8s-dra-driver-gpu" for "123.dkr.ecr.us-east-1.amazonaws.com/nvidia/k8s-dra-driver-gpu:v25.8.1".
func imageName(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	name := path.Base(image)
	if i := strings.Index(name, ":"); i >= 0 {
		name = name[:i]
	}
	return name
}
