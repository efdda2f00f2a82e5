package provider

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// testNamespace creates a namespace for one test and deletes it afterwards.
func testNamespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	_, err := cluster.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cluster.Client().CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// gpuPodSpec asks for gpus on one named node, tolerating the GPU taint, so the
// real scheduler places it there.
func gpuPodSpec(node string, gpus int64, restart corev1.RestartPolicy) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy: restart,
		NodeSelector:  map[string]string{"kubernetes.io/hostname": node},
		Tolerations:   []corev1.Toleration{{Key: gpulabels.TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Containers: []corev1.Container{{
			Name:  "cuda",
			Image: "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
			Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{gpulabels.ResourceName: *resource.NewQuantity(gpus, resource.DecimalSI)},
			},
		}},
	}
}

// holdGPUs runs a pod that holds gpus on node until the test ends.
func holdGPUs(t *testing.T, namespace, name, node string, gpus int64) {
	t.Helper()
	ctx := context.Background()
	pods := cluster.Client().CoreV1().Pods(namespace)
	_, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       gpuPodSpec(node, gpus, corev1.RestartPolicyAlways),
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pod, err := pods.Get(ctx, name, metav1.GetOptions{})
		return err == nil && pod.Status.Phase == corev1.PodRunning && pod.Spec.NodeName == node, nil
	})
	require.NoError(t, err, "pod %s/%s did not run on %s", namespace, name, node)
}

// runJobToCompletion runs a Job asking for gpus on node and waits until it
// completes; its Succeeded pod must no longer count as holding GPUs.
func runJobToCompletion(t *testing.T, namespace, name, node string, gpus int64) {
	t.Helper()
	ctx := context.Background()
	jobs := cluster.Client().BatchV1().Jobs(namespace)
	_, err := jobs.Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: gpuPodSpec(node, gpus, corev1.RestartPolicyNever),
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		job, err := jobs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not there yet: keep polling until the timeout
		}
		for _, c := range job.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "job %s/%s did not complete", namespace, name)
}
