package k8s

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// The kwok stages key on the annotation names the package exports; the
// default pod stages step aside for pods that carry them.
func TestKwokConfigKeysItsPodFailuresOnTheExportedAnnotations(t *testing.T) {
	stages := map[string]string{} // name -> the stage's YAML
	for _, doc := range strings.Split(kwokConfig, "\n---\n") {
		var object struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &object))
		if object.Kind == "Stage" {
			stages[object.Metadata.Name] = doc
		}
	}
	require.Len(t, stages, 7)
	for _, name := range []string{"pod-ready", "pod-complete"} {
		require.Contains(t, stages[name], `'.metadata.annotations["`+FailExitCodeAnnotation+`"]'
      operator: 'DoesNotExist'`, name)
	}
	require.Contains(t, stages["pod-complete"], `'.metadata.annotations["`+KeepRunningAnnotation+`"]'
      operator: 'DoesNotExist'`)
	for _, name := range []string{"gpu-testbed-pod-fail", "gpu-testbed-pod-crash-loop"} {
		require.Contains(t, stages[name], `'.metadata.annotations["`+FailExitCodeAnnotation+`"]'
      operator: 'Exists'`, name)
		require.Contains(t, stages[name], `index $annotations "`+FailMessageAnnotation+`"`, name)
	}
}

func TestJobOfFailingPodsFailsWithBackoffLimitExceeded(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 3*time.Minute)
	client := cluster.Client()
	namespace := createNamespace(ctx, t)

	job := annotatedJob("train", corev1.RestartPolicyNever, map[string]string{
		FailExitCodeAnnotation: "3",
		FailMessageAnnotation:  "CUDA error: out of memory\n",
	})
	_, err := client.BatchV1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)

	failed := waitForJobCondition(ctx, t, namespace, "train", batchv1.JobFailed)
	require.Equal(t, batchv1.JobReasonBackoffLimitExceeded, failed.Reason)
	done, err := client.BatchV1().Jobs(namespace).Get(ctx, "train", metav1.GetOptions{})
	require.NoError(t, err)
	require.EqualValues(t, 2, done.Status.Failed, "one pod, then one retry (backoffLimit 1)")
	require.Zero(t, done.Status.Succeeded)

	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=train"})
	require.NoError(t, err)
	require.NotEmpty(t, pods.Items)
	for _, pod := range pods.Items {
		require.Equal(t, corev1.PodFailed, pod.Status.Phase, pod.Name)
		require.False(t, podReady(&pod), pod.Name)
		require.Len(t, pod.Status.ContainerStatuses, 1)
		status := pod.Status.ContainerStatuses[0]
		require.NotNil(t, status.State.Terminated, "%s: %+v", pod.Name, status.State)
		require.Equal(t, "Error", status.State.Terminated.Reason)
		require.EqualValues(t, 3, status.State.Terminated.ExitCode)
		require.Equal(t, "CUDA error: out of memory\n", status.State.Terminated.Message)
		require.Zero(t, status.RestartCount, "restartPolicy Never restarts nothing")
	}
}

func TestJobOfCrashLoopingPodsFailsWithBackoffLimitExceeded(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 3*time.Minute)
	client := cluster.Client()
	namespace := createNamespace(ctx, t)

	// restartPolicy OnFailure: the kubelet restarts the container in place,
	// and the Job controller counts the restarts against backoffLimit.
	job := annotatedJob("train", corev1.RestartPolicyOnFailure, map[string]string{FailExitCodeAnnotation: "1"})
	_, err := client.BatchV1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)

	failed := waitForJobCondition(ctx, t, namespace, "train", batchv1.JobFailed)
	require.Equal(t, batchv1.JobReasonBackoffLimitExceeded, failed.Reason)
}

func TestDeploymentOfCrashLoopingPodsNeverBecomesAvailable(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 3*time.Minute)
	client := cluster.Client()
	namespace := createNamespace(ctx, t)

	labels := map[string]string{"app": "inference"}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "inference"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{
					FailExitCodeAnnotation: "139",
					FailMessageAnnotation:  "Segmentation fault (core dumped)",
				}},
				Spec: podSpec(1, true, corev1.RestartPolicyAlways),
			},
		},
	}
	_, err := client.AppsV1().Deployments(namespace).Create(ctx, deployment, metav1.CreateOptions{})
	require.NoError(t, err)

	// A second restart shows the back-off loop going on, as the kubelet's does.
	pod, err := waitFor(ctx, client.CoreV1().RESTClient(), "pods", namespace, metav1.ListOptions{LabelSelector: "app=inference"}, func(pod *corev1.Pod) bool {
		return len(pod.Status.ContainerStatuses) == 1 && pod.Status.ContainerStatuses[0].RestartCount >= 2
	})
	require.NoError(t, err, "waiting for the pod's second restart")
	require.Equal(t, corev1.PodRunning, pod.Status.Phase)
	require.False(t, podReady(pod))
	require.True(t, strings.HasPrefix(pod.Spec.NodeName, "gpu-"), "scheduled onto %q", pod.Spec.NodeName)
	require.NotEmpty(t, pod.Status.PodIP)
	ready := pod.Status.Conditions[slices.IndexFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady })]
	require.Equal(t, "ContainersNotReady", ready.Reason)
	require.Equal(t, "containers with unready status: [main]", ready.Message)

	status := pod.Status.ContainerStatuses[0]
	require.False(t, status.Ready)
	require.NotNil(t, status.State.Waiting, "%+v", status.State)
	require.Equal(t, "CrashLoopBackOff", status.State.Waiting.Reason)
	require.Equal(t, "back-off 20s restarting failed container=main pod="+pod.Name+"_"+namespace+"("+string(pod.UID)+")", status.State.Waiting.Message)
	require.NotNil(t, status.LastTerminationState.Terminated, "%+v", status.LastTerminationState)
	require.Equal(t, "Error", status.LastTerminationState.Terminated.Reason)
	require.EqualValues(t, 139, status.LastTerminationState.Terminated.ExitCode)
	require.Equal(t, "Segmentation fault (core dumped)", status.LastTerminationState.Terminated.Message)

	_, err = waitFor(ctx, client.AppsV1().RESTClient(), "deployments", namespace, metav1.ListOptions{}, func(d *appsv1.Deployment) bool {
		return d.Status.UpdatedReplicas == 1 && d.Status.UnavailableReplicas == 1
	})
	require.NoError(t, err, "waiting for the Deployment to count its pod unavailable")
	d, err := client.AppsV1().Deployments(namespace).Get(ctx, "inference", metav1.GetOptions{})
	require.NoError(t, err)
	require.Zero(t, d.Status.AvailableReplicas)
}

// Pods without the annotations run as kwok's default stages make them:
// Running and Ready, and a Job's pods Succeed, whatever their restartPolicy.
func TestPodsWithoutFailureAnnotationsRunAndJobsComplete(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 2*time.Minute)
	client := cluster.Client()
	namespace := createNamespace(ctx, t)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "server", Annotations: map[string]string{"testbed.gpuinfra.io/other": "1"}},
		Spec:       podSpec(0, false, corev1.RestartPolicyAlways),
	}
	_, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	running, err := waitFor(ctx, client.CoreV1().RESTClient(), "pods", namespace, metav1.ListOptions{}, func(pod *corev1.Pod) bool {
		return pod.Name == "server" && podReady(pod)
	})
	require.NoError(t, err, "waiting for the pod to be Ready")
	require.Equal(t, corev1.PodRunning, running.Status.Phase)
	require.NotNil(t, running.Status.ContainerStatuses[0].State.Running)
	require.Zero(t, running.Status.ContainerStatuses[0].RestartCount)

	for _, restart := range []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure} {
		name := "job-" + strings.ToLower(string(restart))
		_, err := client.BatchV1().Jobs(namespace).Create(ctx, annotatedJob(name, restart, nil), metav1.CreateOptions{})
		require.NoError(t, err)
		waitForJobCondition(ctx, t, namespace, name, batchv1.JobComplete)
	}
}

// annotatedJob runs one GPU pod at a time, with annotations on its pod
// template, and gives up after one retry.
func annotatedJob(name string, restart corev1.RestartPolicy, annotations map[string]string) *batchv1.Job {
	backoffLimit := int32(1)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoffLimit,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
				Spec:       podSpec(1, true, restart),
			},
		},
	}
}

// waitForJobCondition watches the Job until it has the condition, and
// returns it; it fails at once when the Job ends the other way.
func waitForJobCondition(ctx context.Context, t *testing.T, namespace, name string, want batchv1.JobConditionType) batchv1.JobCondition {
	t.Helper()
	var got batchv1.JobCondition
	_, err := waitFor(ctx, cluster.Client().BatchV1().RESTClient(), "jobs", namespace, metav1.ListOptions{}, func(job *batchv1.Job) bool {
		if job.Name != name {
			return false
		}
		for _, c := range job.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				got = c
				return true
			}
		}
		return false
	})
	require.NoError(t, err, "waiting for Job %s to be %s", name, want)
	require.Equal(t, want, got.Type, "Job %s ended %s: %s", name, got.Type, got.Message)
	return got
}

func podReady(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}
