package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func gpuContainer(request, limit string) corev1.Container {
	c := corev1.Container{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}}
	if request != "" {
		c.Resources.Requests[ResourceGPU] = resource.MustParse(request)
	}
	if limit != "" {
		c.Resources.Limits[ResourceGPU] = resource.MustParse(limit)
	}
	return c
}

func TestPodGPURequest(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := gpuContainer("1", "")
	sidecar.RestartPolicy = &always
	tests := []struct {
		description string
		spec        corev1.PodSpec
		want        int64
	}{
		{"A pod without GPUs requests none.", corev1.PodSpec{Containers: []corev1.Container{gpuContainer("", "")}}, 0},
		{"App containers add up.", corev1.PodSpec{Containers: []corev1.Container{gpuContainer("2", "2"), gpuContainer("1", "1")}}, 3},
		{"A limit without a request counts as the request.", corev1.PodSpec{Containers: []corev1.Container{gpuContainer("", "4")}}, 4},
		{"An init container larger than the app containers sets the request.",
			corev1.PodSpec{InitContainers: []corev1.Container{gpuContainer("8", "8")}, Containers: []corev1.Container{gpuContainer("1", "1")}}, 8},
		{"A sidecar init container adds to the app containers.",
			corev1.PodSpec{InitContainers: []corev1.Container{sidecar}, Containers: []corev1.Container{gpuContainer("2", "2")}}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			require.Equal(t, tc.want, podGPURequest(&corev1.Pod{Spec: tc.spec}))
		})
	}
}
