package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// fullJobSpec sets everything a job spec carries.
func fullJobSpec() WorkloadSpec {
	s := testJobSpec(2)
	s.Labels = map[string]string{"team": "ml"}
	s.Annotations = map[string]string{"example.com/owner": "ml-platform"}
	c := &s.Pod.Container
	c.Command = []string{"torchrun"}
	c.Args = []string{"--nproc_per_node=2", "train.py"}
	c.Env = map[string]string{"NCCL_DEBUG": "INFO"}
	c.WorkingDir = "/workspace"
	c.CPURequest, c.MemoryRequest = ptr.To(resource.MustParse("8")), ptr.To(resource.MustParse("64Gi"))
	c.CPULimit, c.MemoryLimit = ptr.To(resource.MustParse("16")), ptr.To(resource.MustParse("128Gi"))
	s.Pod.GPU = WorkloadGPU{Count: 2, Products: []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"}, MinMemoryGiB: 79,
		MinCompute: &ComputeCapability{Major: 8, Minor: 6}}
	s.Pod.ServiceAccount = "trainer"
	s.Pod.ImagePullSecrets = []string{"ngc"}
	s.Pod.RuntimeClassName = ptr.To("nvidia")
	s.Pod.NodeSelector = map[string]string{"pool": "training"}
	s.Pod.Tolerations = []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(30))}}
	s.Pod.ShmSize = ptr.To(resource.MustParse("16Gi"))
	s.Pod.Volumes = []ClaimVolume{{Name: "workspace", ClaimName: "train-workspace", MountPath: "/workspace"}}
	s.Job = JobSettings{BackoffLimit: ptr.To(int32(2)), Completions: ptr.To(int32(4)), Parallelism: ptr.To(int32(2)),
		ActiveDeadlineSeconds: ptr.To(int64(3600)), TTLSecondsAfterFinished: ptr.To(int32(600)), RestartPolicy: corev1.RestartPolicyOnFailure, Suspend: true}
	return s
}

func TestWorkloadSpecReadsBackWhatWasBuilt(t *testing.T) {
	deployment := fullJobSpec()
	deployment.Kind, deployment.Job = WorkloadDeployment, JobSettings{}
	deployment.Deployment = DeploymentSettings{Replicas: ptr.To(int32(3)), Strategy: appsv1.RecreateDeploymentStrategyType}
	shared := testJobSpec(1)
	shared.Pod.GPU = WorkloadGPU{Count: 1, Shared: true, Products: []string{"Tesla-T4"}, MinCompute: &ComputeCapability{Major: 7}}
	mig := testJobSpec(3)
	mig.Pod.GPU.MIGProfile = "1g.10gb"
	tests := []struct {
		description string
		spec        WorkloadSpec
	}{
		{"A job with everything set reads back the same.", fullJobSpec()},
		{"A deployment with everything set reads back the same.", deployment},
		{"A minimal job reads back the same.", testJobSpec(1)},
		{"A shared GPU reads back as shared, without GFD's -SHARED products.", shared},
		{"MIG instances read back as their profile and count.", mig},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			var got WorkloadSpec
			if tt.spec.Kind == WorkloadDeployment {
				got = DeploymentWorkloadSpec(BuildDeployment(tt.spec), tt.spec.Pod.Container.Name)
			} else {
				got = JobWorkloadSpec(BuildJob(tt.spec), tt.spec.Pod.Container.Name)
			}
			require.Equal(t, tt.spec, got)
		})
	}
}

func TestWorkloadSpecIgnoresWhatKubernetesAdds(t *testing.T) {
	dep := BuildDeployment(func() WorkloadSpec {
		s := testJobSpec(1)
		s.Kind = WorkloadDeployment
		s.Annotations = map[string]string{"example.com/owner": "ml-platform"}
		return s
	}())
	dep.Annotations["deployment.kubernetes.io/revision"] = "2"
	dep.Spec.Template.Spec.Containers = append([]corev1.Container{{Name: "istio-proxy", Image: "istio/proxyv2"}}, dep.Spec.Template.Spec.Containers...)
	dep.Spec.Template.Spec.Containers[1].Env = append(dep.Spec.Template.Spec.Containers[1].Env,
		corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}})

	got := DeploymentWorkloadSpec(dep, "main")
	require.Equal(t, map[string]string{"example.com/owner": "ml-platform"}, got.Annotations, "Kubernetes' own annotations are not the user's")
	require.Equal(t, "main", got.Pod.Container.Name, "the named container is read, not an injected sidecar")
	require.Nil(t, got.Pod.Container.Env, "env from the downward API is not the user's")
	require.NotContains(t, got.Labels, WorkloadLabel)
}

func TestJobNeedsReplacement(t *testing.T) {
	tests := []struct {
		description string
		change      func(*WorkloadSpec)
		replace     bool
	}{
		{"Nothing changed.", func(*WorkloadSpec) {}, false},
		{"Parallelism changes in place.", func(s *WorkloadSpec) { s.Job.Parallelism = ptr.To(int32(8)) }, false},
		{"The backoff limit changes in place.", func(s *WorkloadSpec) { s.Job.BackoffLimit = ptr.To(int32(0)) }, false},
		{"The active deadline changes in place, even removed.", func(s *WorkloadSpec) { s.Job.ActiveDeadlineSeconds = nil }, false},
		{"The TTL changes in place.", func(s *WorkloadSpec) { s.Job.TTLSecondsAfterFinished = ptr.To(int32(0)) }, false},
		{"Suspend changes in place.", func(s *WorkloadSpec) { s.Job.Suspend = false }, false},
		{"Completions do not change in place.", func(s *WorkloadSpec) { s.Job.Completions = ptr.To(int32(5)) }, true},
		{"The restart policy is the pod template's.", func(s *WorkloadSpec) { s.Job.RestartPolicy = corev1.RestartPolicyNever }, true},
		{"The image is the pod template's.", func(s *WorkloadSpec) { s.Pod.Container.Image = "nvcr.io/nvidia/pytorch:24.06-py3" }, true},
		{"The GPU count is the pod template's.", func(s *WorkloadSpec) { s.Pod.GPU.Count = 4 }, true},
		{"Labels go on the pod template.", func(s *WorkloadSpec) { s.Labels["team"] = "research" }, true},
		{"Tolerations are the pod template's.", func(s *WorkloadSpec) { s.Pod.Tolerations = nil }, true},
		{"A quantity spelled differently is the same.", func(s *WorkloadSpec) { s.Pod.Container.CPURequest = ptr.To(resource.MustParse("8000m")) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			planned := fullJobSpec()
			tt.change(&planned)
			require.Equal(t, tt.replace, JobNeedsReplacement(fullJobSpec(), planned))
		})
	}
}

func TestDescribeContainerTrouble(t *testing.T) {
	crashLooping := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name:                 "main",
		RestartCount:         4,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 3, Message: "CUDA error: no CUDA-capable device is detected\n"}},
	}}}}
	require.Equal(t, " (container main CrashLoopBackOff after 4 restarts; last ended Error, exit code 3: CUDA error: no CUDA-capable device is detected)",
		describeContainerTrouble(&crashLooping))

	pulling := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image \"nvcr.io/x\""}},
	}}}}
	require.Equal(t, " (container main ImagePullBackOff: Back-off pulling image \"nvcr.io/x\")", describeContainerTrouble(&pulling))

	starting := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
	}}}}
	require.Empty(t, describeContainerTrouble(&starting), "a container on its way up is no trouble")
}
