package k8s

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// healthTestSettings are the agent's settings in the tests' DaemonSets: a
// short damping, so a recovery shows soon after the fault.
func healthTestSettings(taint bool) gpuhealth.Settings {
	s := gpuhealth.DefaultSettings()
	s.SampleInterval, s.Damping, s.Taint = time.Second, 2*time.Second, taint
	return s
}

// healthAgentNodes registers n 8-GPU kwok nodes (p4d.24xlarge: the
// double's A100s) labeled for the test, and runs the health agent on them
// from a DaemonSet in namespace, as gpu_device_plugin deploys it; it
// returns the nodes once each reports the condition True.
func healthAgentNodes(ctx context.Context, t *testing.T, namespace string, n int, settings gpuhealth.Settings) []string {
	t.Helper()
	label := map[string]string{"testbed.gpuinfra.io/health-test": namespace}
	var names []string
	for i := range n {
		name := "gpu-p4d-health-" + rand.String(5)
		require.NoError(t, cluster.AddNode(ctx, NodeSpec{Name: name, InstanceType: mustInstanceType("p4d.24xlarge"), ExtraLabels: label}), "node %d", i)
		t.Cleanup(func() { _ = cluster.DeleteNode(context.Background(), name) })
		names = append(names, name)
	}
	require.NoError(t, cluster.WaitForNodesReady(ctx, names...))

	podLabels := map[string]string{"app.kubernetes.io/name": gpuhealth.ComponentHealthAgent}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-health-agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					NodeSelector: label,
					Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name:    "health-agent",
						Image:   "ghcr.io/gpuinfra/gpu-bootstrap:test",
						Command: []string{"gpu-bootstrap"},
						Args:    settings.Args(),
						Env: []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"},
						}}},
					}},
				},
			},
		},
	}
	_, err := cluster.Client().AppsV1().DaemonSets(namespace).Create(ctx, ds, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, name := range names {
		waitForGPUHealth(ctx, t, name, corev1.ConditionTrue, gpuhealth.ReasonReady)
	}
	return names
}

// waitForGPUHealth watches node until its AcceleratedHardwareReady
// condition has status and reason and its unhealthy-GPU annotation names
// the GPUs with these indices (the agent writes the two apart), and
// returns what it read.
func waitForGPUHealth(ctx context.Context, t *testing.T, node string, status corev1.ConditionStatus, reason string, unhealthy ...int) gpuhealth.NodeHealth {
	t.Helper()
	var got gpuhealth.NodeHealth
	_, err := waitFor(ctx, cluster.Client().CoreV1().RESTClient(), "nodes", "", metav1.ListOptions{FieldSelector: "metadata.name=" + node}, func(n *corev1.Node) bool {
		got = gpuhealth.ReadNode(n)
		var indices []int
		for _, gpu := range got.Unhealthy {
			indices = append(indices, gpu.Index)
		}
		return got.Status == status && got.Reason == reason && slices.Equal(indices, unhealthy)
	})
	require.NoError(t, err, "waiting for node %s's %s to be %s (%s) with unhealthy GPUs %v; last read %+v", node, gpuhealth.ConditionType, status, reason, unhealthy, got)
	return got
}

func TestHealthAgentReportsAnXIDAndTheRecovery(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 2*time.Minute)
	node := healthAgentNodes(ctx, t, createNamespace(ctx, t), 1, healthTestSettings(false))[0]

	require.NoError(t, cluster.FireXID(ctx, node, 3, 79))
	health := waitForGPUHealth(ctx, t, node, corev1.ConditionFalse, gpuhealth.XIDErrorReason(79), 3)
	require.Contains(t, health.Message, "GPU 3")

	require.NoError(t, cluster.RecoverGPU(ctx, node, 3))
	waitForGPUHealth(ctx, t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)

	require.NoError(t, cluster.AddECCErrors(ctx, node, 5, 0, 2))
	waitForGPUHealth(ctx, t, node, corev1.ConditionFalse, gpuhealth.ReasonDoubleBitError, 5)
}

// A reboot (a new boot ID, as the AWS emulator's node repair writes it)
// gives the node healthy GPUs again.
func TestHealthAgentNodeRebootBringsHealthyGPUs(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 2*time.Minute)
	node := healthAgentNodes(ctx, t, createNamespace(ctx, t), 1, healthTestSettings(false))[0]

	require.NoError(t, cluster.LoseGPU(ctx, node, 6))
	waitForGPUHealth(ctx, t, node, corev1.ConditionFalse, gpuhealth.XIDErrorReason(79), 6)

	patch := []byte(`{"status":{"nodeInfo":{"bootID":"` + rand.String(8) + `"}}}`)
	_, err := cluster.Client().CoreV1().Nodes().PatchStatus(ctx, node, patch)
	require.NoError(t, err)
	waitForGPUHealth(ctx, t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
}

// A Job's pod on a node whose GPU falls off the bus fails as its CUDA
// application dies, and the Job's retry lands on the other node: the
// agent's taint keeps it off the faulted one.
func TestJobOnAFaultedNodeFailsOver(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 3*time.Minute)
	namespace := createNamespace(ctx, t)
	nodes := healthAgentNodes(ctx, t, namespace, 2, healthTestSettings(true))
	faulted, spare := nodes[0], nodes[1]
	setUnschedulable(ctx, t, spare, true) // the first pod goes to faulted

	job := annotatedJob("train", corev1.RestartPolicyNever, map[string]string{KeepRunningAnnotation: "true"})
	job.Spec.BackoffLimit = ptr.To(int32(3))
	job.Spec.Template.Spec.NodeSelector = map[string]string{"testbed.gpuinfra.io/health-test": namespace}
	_, err := cluster.Client().BatchV1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)
	first := waitForJobPod(ctx, t, namespace, func(p *corev1.Pod) bool { return podRunning(p) })
	require.Equal(t, faulted, first.Spec.NodeName)
	setUnschedulable(ctx, t, spare, false)

	require.NoError(t, cluster.FireXID(ctx, faulted, 3, 79))
	failed := waitForJobPod(ctx, t, namespace, func(p *corev1.Pod) bool { return p.UID == first.UID && p.Status.Phase == corev1.PodFailed })
	require.Len(t, failed.Status.ContainerStatuses, 1)
	terminated := failed.Status.ContainerStatuses[0].State.Terminated
	require.NotNil(t, terminated)
	require.EqualValues(t, 1, terminated.ExitCode)
	require.Contains(t, terminated.Message, "XID 79")

	retry := waitForJobPod(ctx, t, namespace, func(p *corev1.Pod) bool { return p.UID != first.UID && podRunning(p) })
	require.Equal(t, spare, retry.Spec.NodeName)
	node, err := cluster.Client().CoreV1().Nodes().Get(ctx, faulted, metav1.GetOptions{})
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(node.Spec.Taints, func(taint corev1.Taint) bool {
		return taint.Key == gpuhealth.TaintKey && taint.Value == gpuhealth.XIDErrorReason(79) && taint.Effect == corev1.TaintEffectNoSchedule
	}), "the agent's taint on %s: %v", faulted, node.Spec.Taints)
}

func TestGPUFaultControlsNeedAHealthAgent(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 2*time.Minute)
	err := cluster.FireXID(ctx, "gpu-g4dn-0", 0, 79)
	require.ErrorContains(t, err, "no health agent runs on node gpu-g4dn-0")

	node := healthAgentNodes(ctx, t, createNamespace(ctx, t), 1, healthTestSettings(false))[0]
	require.ErrorContains(t, cluster.LoseGPU(ctx, node, 8), "gpu 8: the node's NVML enumerates 8 GPUs")
	require.ErrorContains(t, cluster.RecoverGPU(ctx, node, -1), "gpu -1")
	updated, err := cluster.Client().CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	for key := range updated.Annotations {
		require.NotContains(t, key, "gpu-fault", "answered requests leave nothing behind")
	}
}

// What kubectl does for a detached testbed: annotate the node.
func TestGPUFaultRequestByAnnotation(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 2*time.Minute)
	node := healthAgentNodes(ctx, t, createNamespace(ctx, t), 1, healthTestSettings(false))[0]

	annotate := func(key, value string) {
		t.Helper()
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
		require.NoError(t, err)
		_, err = cluster.Client().CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		require.NoError(t, err)
	}
	annotate(GPUFaultRequestPrefix+"by-kubectl-1", `{"gpu":2,"lose":true}`)
	waitForGPUHealth(ctx, t, node, corev1.ConditionFalse, gpuhealth.XIDErrorReason(79), 2)
	annotate(GPUFaultRequestPrefix+"by-kubectl-2", `{"gpu":2,"recover":true}`)
	waitForGPUHealth(ctx, t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)

	annotate(GPUFaultRequestPrefix+"by-kubectl-3", `{"gpu":2}`)
	answered, err := waitFor(ctx, cluster.Client().CoreV1().RESTClient(), "nodes", "", metav1.ListOptions{FieldSelector: "metadata.name=" + node}, func(n *corev1.Node) bool {
		_, asked := n.Annotations[GPUFaultRequestPrefix+"by-kubectl-3"]
		return !asked
	})
	require.NoError(t, err)
	require.Contains(t, answered.Annotations[GPUFaultErrorPrefix+"by-kubectl-3"], "exactly one of")
	for _, id := range []string{"by-kubectl-1", "by-kubectl-2"} {
		require.NotContains(t, answered.Annotations, GPUFaultRequestPrefix+id)
		require.NotContains(t, answered.Annotations, GPUFaultErrorPrefix+id)
	}
}

func setUnschedulable(ctx context.Context, t *testing.T, node string, unschedulable bool) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": unschedulable}})
	require.NoError(t, err)
	_, err = cluster.Client().CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
}

// waitForJobPod watches namespace's pods until one of Job "train" is done.
func waitForJobPod(ctx context.Context, t *testing.T, namespace string, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	pod, err := waitFor(ctx, cluster.Client().CoreV1().RESTClient(), "pods", namespace, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=train"}, done)
	require.NoError(t, err)
	return pod
}

// A node deleted and registered again under its name is a new machine: its
// GPUs are healthy, whatever the old one's were.
func TestHealthAgentNodeRegisteredAgainBringsHealthyGPUs(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 3*time.Minute)
	namespace := createNamespace(ctx, t)
	node := healthAgentNodes(ctx, t, namespace, 1, healthTestSettings(false))[0]

	require.NoError(t, cluster.LoseGPU(ctx, node, 6))
	waitForGPUHealth(ctx, t, node, corev1.ConditionFalse, gpuhealth.XIDErrorReason(79), 6)

	require.NoError(t, cluster.DeleteNode(ctx, node))
	require.NoError(t, cluster.AddNode(ctx, NodeSpec{Name: node, InstanceType: mustInstanceType("p4d.24xlarge"),
		ExtraLabels: map[string]string{"testbed.gpuinfra.io/health-test": namespace}}))
	require.NoError(t, cluster.WaitForNodesReady(ctx, node))
	waitForGPUHealth(ctx, t, node, corev1.ConditionTrue, gpuhealth.ReasonReady)
}
