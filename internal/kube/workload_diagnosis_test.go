package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDescribeTermination(t *testing.T) {
	terminated := func(reason string, code int32, message string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, Message: message}}
	}
	tests := []struct {
		description string
		pod         corev1.Pod
		want        string
	}{
		{
			description: "A container that exited non-zero is described with its reason, code and termination message.",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "train-x7k2p"},
				Spec:       corev1.PodSpec{NodeName: "gpu-p5-0"},
				Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
					{Name: "main", State: terminated("Error", 1, "CUDA error: out of memory\n")},
				}},
			},
			want: "Its last failed pod train-x7k2p on gpu-p5-0 ended: container main Error, exit code 1: CUDA error: out of memory.",
		},
		{
			description: "With restartPolicy OnFailure the running container's last termination is used.",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "train-abcde"},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
					{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, LastTerminationState: terminated("OOMKilled", 137, "")},
				}},
			},
			want: "Its last failed pod train-abcde ended: container main OOMKilled, exit code 137.",
		},
		{
			description: "A pod the kubelet evicted is described by its own reason.",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "train-evict"},
				Status:     corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline."},
			},
			want: "Its last failed pod train-evict ended: DeadlineExceeded: Pod was active on the node longer than the specified deadline.",
		},
		{
			description: "A container that succeeded says nothing.",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "train-ok"},
				Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{
					{Name: "main", State: terminated("Completed", 0, "")},
				}},
			},
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			require.Equal(t, tt.want, describeTermination(&tt.pod))
		})
	}
}
