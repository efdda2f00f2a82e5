package k8s

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

func TestGPUNodesLookLikeRealOnes(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 30*time.Second)

	node, err := cluster.Client().CoreV1().Nodes().Get(ctx, "gpu-p5-0", metav1.GetOptions{})
	require.NoError(t, err)

	for key, want := range map[string]string{
		gpulabels.Product:               "NVIDIA-H100-80GB-HBM3",
		gpulabels.Count:                 "8",
		gpulabels.Memory:                "81559",
		gpulabels.Family:                "hopper",
		gpulabels.ComputeMajor:          "9",
		gpulabels.ComputeMinor:          "0",
		gpulabels.Present:               "true",
		gpulabels.DriverVersionFull:     "550.54.15",
		gpulabels.DriverVersionRevision: "15",
		gpulabels.RuntimeVersionFull:    "12.4",
		corev1.LabelInstanceTypeStable:  "p5.48xlarge",
		corev1.LabelArchStable:          "amd64",
		corev1.LabelOSStable:            "linux",
		corev1.LabelHostname:            "gpu-p5-0",
		"type":                          "kwok",
	} {
		require.Equal(t, want, node.Labels[key], "label %s", key)
	}
	require.NotContains(t, node.Labels, gpulabels.MIGStrategy, "GFD writes no MIG strategy label with strategy none")
	require.Equal(t, KwokNodeAnnotationValue, node.Annotations[KwokNodeAnnotation])
	require.Contains(t, node.Spec.Taints, corev1.Taint{Key: gpulabels.TaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule})

	for _, list := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
		requireQuantity(t, "8", list[gpulabels.ResourceName])
		requireQuantity(t, "192", list[corev1.ResourceCPU])
		requireQuantity(t, "2Ti", list[corev1.ResourceMemory])
		requireQuantity(t, "110", list[corev1.ResourcePods])
	}
	require.True(t, isSchedulable(node), "node is Ready without the not-ready taint")

	cpuNode, err := cluster.Client().CoreV1().Nodes().Get(ctx, "cpu-m5-0", metav1.GetOptions{})
	require.NoError(t, err)
	require.Empty(t, cpuNode.Spec.Taints)
	require.NotContains(t, cpuNode.Status.Capacity, corev1.ResourceName(gpulabels.ResourceName))
	require.NotContains(t, cpuNode.Labels, gpulabels.Product)
}

func TestAPIServerReportsItsRelease(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	version, err := cluster.Client().Discovery().ServerVersion()
	require.NoError(t, err)
	chosen, err := testbed.ChosenKubernetesVersion()
	require.NoError(t, err)
	require.Equal(t, chosen, cluster.KubernetesVersion(), "the cluster runs the release GPU_TESTBED_KUBERNETES chose")
	require.Equal(t, chosen, version.GitVersion, "Install stamps the version into the binaries")
}

func TestGPUJobRunsOnAGPUNodeAndCompletes(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, time.Minute)
	client := cluster.Client()
	namespace := createNamespace(ctx, t)

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train"},
		Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: podSpec(2, true, corev1.RestartPolicyNever)},
		},
	}
	_, err := client.BatchV1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)

	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		job, err := client.BatchV1().Jobs(namespace).Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range job.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				return false, fmt.Errorf("job failed: %s", c.Message)
			}
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "waiting for the job to complete")

	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=train"})
	require.NoError(t, err)
	require.NotEmpty(t, pods.Items)
	pod := pods.Items[0]
	require.Equal(t, corev1.PodSucceeded, pod.Status.Phase)
	require.True(t, strings.HasPrefix(pod.Spec.NodeName, "gpu-"), "scheduled onto %q", pod.Spec.NodeName)
}

func TestPodsWithoutTheGPUTolerationStayOffGPUNodes(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, time.Minute)
	client := cluster.Client()
	namespace := createNamespace(ctx, t)

	wantsGPUs := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wants-gpus"}, Spec: podSpec(1, false, corev1.RestartPolicyNever)}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: podSpec(0, false, corev1.RestartPolicyNever)}
	for _, pod := range []*corev1.Pod{wantsGPUs, plain} {
		_, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	// The plain pod is scheduled, and only the CPU node is open to it.
	var plainNode string
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pod, err := client.CoreV1().Pods(namespace).Get(ctx, "plain", metav1.GetOptions{})
		plainNode = pod.Spec.NodeName
		return err == nil && pod.Status.Phase == corev1.PodRunning, err
	})
	require.NoError(t, err, "waiting for the pod without GPUs to run")
	require.Equal(t, "cpu-m5-0", plainNode)

	// The GPU pod is rejected by the scheduler: the only nodes with GPUs
	// have a taint it does not tolerate.
	var message string
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pod, err := client.CoreV1().Pods(namespace).Get(ctx, "wants-gpus", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		require.Empty(t, pod.Spec.NodeName, "a pod without the toleration was bound")
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				message = c.Message
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "waiting for the scheduler to reject the GPU pod")
	// Since 1.34 the scheduler no longer names the taint; the two nodes
	// it counts are the GPU nodes, whose only taint is nvidia.com/gpu.
	require.Contains(t, message, "2 node(s) had untolerated taint(s)")
}

func TestAddedNodesBecomeReady(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, time.Minute)

	specs := make([]NodeSpec, 20)
	names := make([]string, len(specs))
	for i := range specs {
		names[i] = fmt.Sprintf("gpu-g5-added-%d", i)
		specs[i] = NodeSpec{Name: names[i], InstanceType: mustInstanceType("g5.xlarge"), ExtraLabels: map[string]string{"pool": "added"}}
	}
	require.NoError(t, cluster.AddNodes(ctx, specs))
	t.Cleanup(func() {
		for _, name := range names {
			require.NoError(t, cluster.DeleteNode(context.Background(), name))
		}
	})
	require.NoError(t, cluster.WaitForNodesReady(ctx, names...))

	node, err := cluster.Client().CoreV1().Nodes().Get(ctx, names[0], metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "added", node.Labels["pool"])
	require.Equal(t, "g5.xlarge", node.Labels[corev1.LabelInstanceTypeStable])
	require.NotContains(t, node.Labels, gpulabels.Product, "GFD's labels without GFD")
}

func TestEveryCatalogInstanceTypeRegistersAndBecomesReady(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, time.Minute)

	types := ec2catalog.All()
	specs := make([]NodeSpec, len(types))
	names := make([]string, len(types))
	for i, p := range types {
		names[i] = "catalog-" + strings.ReplaceAll(p.Name, ".", "-")
		specs[i] = NodeSpec{Name: names[i], InstanceType: p, GFDLabeled: true, ExtraLabels: map[string]string{"pool": "catalog"}}
	}
	require.NoError(t, cluster.AddNodes(ctx, specs))
	t.Cleanup(func() {
		for _, name := range names {
			require.NoError(t, cluster.DeleteNode(context.Background(), name))
		}
	})
	require.NoError(t, cluster.WaitForNodesReady(ctx, names...))

	for i, p := range types {
		node, err := cluster.Client().CoreV1().Nodes().Get(ctx, names[i], metav1.GetOptions{})
		require.NoError(t, err)
		gpus := node.Status.Allocatable[gpulabels.ResourceName]
		require.Equal(t, int64(p.GPUCount), gpus.Value(), p.Name)
		require.Equal(t, p.GPUProduct, node.Labels[gpulabels.Product], p.Name)
	}
}

// podSpec asks for gpus NVIDIA GPUs, optionally tolerating the GPU taint.
// The image is never pulled: kwok runs nothing.
func podSpec(gpus int64, tolerateGPUTaint bool, restart corev1.RestartPolicy) corev1.PodSpec {
	container := corev1.Container{Name: "main", Image: "registry.example/cuda-sample:vectoradd"}
	if gpus > 0 {
		container.Resources.Limits = corev1.ResourceList{gpulabels.ResourceName: *resource.NewQuantity(gpus, resource.DecimalSI)}
	}
	spec := corev1.PodSpec{Containers: []corev1.Container{container}, RestartPolicy: restart}
	if tolerateGPUTaint {
		spec.Tolerations = []corev1.Toleration{{Key: gpulabels.TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	return spec
}

func createNamespace(ctx context.Context, t *testing.T) string {
	t.Helper()
	name := "test-" + rand.String(6)
	_, err := cluster.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cluster.Client().CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

func testContext(t *testing.T, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

func requireQuantity(t *testing.T, want string, got resource.Quantity) {
	t.Helper()
	wantQuantity := resource.MustParse(want)
	require.Zero(t, wantQuantity.Cmp(got), "want %s, got %s", want, got.String())
}
