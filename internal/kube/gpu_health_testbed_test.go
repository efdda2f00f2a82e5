package kube

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// These tests write what a GPU health agent writes (the condition with a
// status patch, the annotation and the taint on the node) themselves, so
// that they test the reads, not an agent.

// reportGPUHealth writes node's AcceleratedHardwareReady condition and its
// unhealthy-GPUs annotation (removed when unhealthy is empty), as a health
// agent does.
func reportGPUHealth(t *testing.T, client kubernetes.Interface, node string, status corev1.ConditionStatus, reason, message string, unhealthy ...gpuhealth.UnhealthyGPU) time.Time {
	t.Helper()
	ctx := context.Background()
	since := time.Now().UTC().Truncate(time.Second)
	var annotation any // null removes it
	if len(unhealthy) > 0 {
		annotation = gpuhealth.EncodeUnhealthy(unhealthy)
	}
	meta, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{gpuhealth.AnnotationUnhealthyGPUs: annotation}}})
	require.NoError(t, err)
	_, err = client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, meta, metav1.PatchOptions{})
	require.NoError(t, err)
	// A strategic merge patch: conditions merge by type, the kubelet's (or
	// kwok's) stay.
	cond, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: gpuhealth.ConditionType, Status: status, Reason: reason, Message: message,
		LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since),
	}}}})
	require.NoError(t, err)
	_, err = client.CoreV1().Nodes().PatchStatus(ctx, node, cond)
	require.NoError(t, err)
	return since
}

// healthSentence matches the diagnosis' sentence on node's XID 79 since
// since (with its date, should the day have turned since).
func healthSentence(node string, since time.Time) *regexp.Regexp {
	return regexp.MustCompile(regexp.QuoteMeta(" GPU health: node "+node+": AcceleratedHardwareReady=False since ") +
		`(\d{4}-\d\d-\d\d )?` + regexp.QuoteMeta(since.UTC().Format("15:04")+" ("+xid79Message+")."))
}

// taintGPUUnhealthy adds the health agent's taint to node.
func taintGPUUnhealthy(t *testing.T, client kubernetes.Interface, node, reason string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: gpuhealth.TaintKey, Value: reason, Effect: corev1.TaintEffectNoSchedule})
		_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	}))
}

func TestInventoryOnRealAPIServerLeavesUnhealthyGPUsOutOfFree(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	admin := cluster.Client()
	requireDRAServed(t, admin)
	const suite = "suite=inventory-health"
	mine := map[string]string{"suite": "inventory-health"}
	createNodeForTest(t, admin, plainGPUNode("invh-dp", "NVIDIA-A100-SXM4-40GB", 8, 40960, mine))
	createNodeForTest(t, admin, plainGPUNode("invh-healthy", "NVIDIA-A100-SXM4-40GB", 8, 40960, mine))
	createNodeForTest(t, admin, draOnlyNode("invh-dra", mine))
	h100 := func(i int) resourcev1.Device { return testGPUDevice(i, "NVIDIA H100 80GB HBM3", 80) }
	createSlices(t, admin, inventoryTestSlice("invh-dra", "invh-dra", 1, h100(0), h100(1), h100(2), h100(3)))
	const ns = "inventory-health"
	createNamespace(t, ns)
	t.Cleanup(func() { _ = admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	_, err := admin.CoreV1().Pods(ns).Create(ctx, boundGPUPod("holds-2", "invh-dp", 2), metav1.CreateOptions{})
	require.NoError(t, err)

	xid := gpuhealth.XIDErrorReason(79)
	since := reportGPUHealth(t, admin, "invh-dp", corev1.ConditionFalse, xid, xid79Message, unhealthyGPU(3, xid))
	reportGPUHealth(t, admin, "invh-healthy", corev1.ConditionTrue, gpuhealth.ReasonReady, "")
	reportGPUHealth(t, admin, "invh-dra", corev1.ConditionFalse, xid, xid79Message, unhealthyGPU(1, xid))

	c, err := Connect(cluster.RESTConfig(), ClusterOptions{})
	require.NoError(t, err)
	read := func() map[string]GPUNode {
		t.Helper()
		inv, err := c.ListInventory(ctx, InventoryOptions{LabelSelector: suite})
		require.NoError(t, err)
		byName := map[string]GPUNode{}
		for _, n := range inv.Nodes {
			byName[n.Name] = n
		}
		return byName
	}
	nodes := read()
	dp := nodes["invh-dp"]
	require.True(t, dp.Health.Reported)
	require.Equal(t, corev1.ConditionFalse, dp.Health.Status)
	require.Equal(t, xid, dp.Health.Reason)
	require.Equal(t, xid79Message, dp.Health.Message)
	require.True(t, since.Equal(dp.Health.Since), "since is the condition's lastTransitionTime: %s, want %s", dp.Health.Since, since)
	require.Equal(t, []gpuhealth.UnhealthyGPU{unhealthyGPU(3, xid)}, dp.Health.Unhealthy)
	require.Equal(t, int64(8), dp.Allocatable, "allocatable stays the kubelet's")
	require.Equal(t, int64(2), dp.Allocated)
	require.Equal(t, int64(5), dp.Free, "8 GPUs, 2 held, 1 unhealthy")
	require.Equal(t, int64(8), nodes["invh-healthy"].Free, "True changes nothing")
	dra := nodes["invh-dra"]
	require.Equal(t, GPUPathDRA, dra.GPUPath)
	require.Equal(t, DeviceCounts{Published: 4, Unhealthy: 1, Free: 3}, dra.DRA)
	require.Equal(t, int64(3), dra.Free, "the unhealthy GPU's device is not free")

	// The fault clears: the agent sets True and removes the annotation.
	reportGPUHealth(t, admin, "invh-dp", corev1.ConditionTrue, gpuhealth.ReasonReady, "")
	reportGPUHealth(t, admin, "invh-dra", corev1.ConditionTrue, gpuhealth.ReasonReady, "")
	nodes = read()
	require.Equal(t, int64(6), nodes["invh-dp"].Free)
	require.Empty(t, nodes["invh-dp"].Health.Unhealthy)
	require.Equal(t, int64(4), nodes["invh-dra"].Free)

	// A fault of the whole node (no GPU named) leaves nothing free.
	reportGPUHealth(t, admin, "invh-dp", corev1.ConditionFalse, gpuhealth.ReasonDeviceCountMismatch, "NVML sees 7 GPUs, the node has 8")
	require.Equal(t, int64(0), read()["invh-dp"].Free)
}

// healthTestNode registers a kwok GPU node (8 H100s, advertised) for one
// test, its pods' only choice through label "health-test".
func healthTestNode(t *testing.T, name string) {
	t.Helper()
	p5, ok := ec2catalog.Lookup("p5.48xlarge")
	require.True(t, ok)
	ctx := context.Background()
	require.NoError(t, cluster.AddNode(ctx, k8s.NodeSpec{Name: name, InstanceType: p5, GFDLabeled: true, ExtraLabels: map[string]string{"health-test": name}}))
	t.Cleanup(func() { _ = cluster.DeleteNode(context.Background(), name) })
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	require.NoError(t, cluster.WaitForNodesReady(waitCtx, name))
}

// healthTestJob is a one-pod Job of one GPU in a namespace of its own,
// pinned to node.
func healthTestJob(t *testing.T, name, node string) WorkloadSpec {
	t.Helper()
	createNamespace(t, name)
	t.Cleanup(func() {
		_ = cluster.Client().CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	spec := testJobSpec(1)
	spec.Namespace, spec.Name = name, name
	spec.Pod.NodeSelector = map[string]string{"health-test": node}
	spec.Job.BackoffLimit = ptr.To[int32](0)
	return spec
}

func TestJobThatFailedOnAnUnhealthyNodeNamesItsGPUHealth(t *testing.T) {
	requireCluster(t)
	const name, node = "health-failed-job", "health-failed-job-p5"
	healthTestNode(t, node)
	xid := gpuhealth.XIDErrorReason(79)
	since := reportGPUHealth(t, cluster.Client(), node, corev1.ConditionFalse, xid, xid79Message, unhealthyGPU(3, xid))
	spec := healthTestJob(t, name, node)
	// The container crashes as a CUDA program does on a GPU that fell off
	// the bus (the testbed's kwok stages end it so).
	spec.Annotations = map[string]string{
		k8s.FailExitCodeAnnotation: "1",
		k8s.FailMessageAnnotation:  "CUDA error: unspecified launch failure",
	}
	c, owner := createDRAWorkload(t, spec)
	t.Cleanup(func() { _ = c.DeleteWorkload(context.Background(), spec.Ref(), owner) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	_, err := c.WaitForWorkload(ctx, spec)
	require.Error(t, err)
	t.Log(err)
	require.Contains(t, err.Error(), "the Job failed (BackoffLimitExceeded)")
	require.Contains(t, err.Error(), "on "+node+" ended: container main Error, exit code 1: CUDA error: unspecified launch failure.")
	require.Regexp(t, healthSentence(node, since), err.Error())
}

func TestPendingPodWhoseOnlyNodeIsUnhealthyAndTaintedIsDiagnosed(t *testing.T) {
	requireCluster(t)
	const name, node = "health-pending-job", "health-pending-job-p5"
	healthTestNode(t, node)
	xid := gpuhealth.XIDErrorReason(79)
	since := reportGPUHealth(t, cluster.Client(), node, corev1.ConditionFalse, xid, xid79Message, unhealthyGPU(3, xid))
	taintGPUUnhealthy(t, cluster.Client(), node, xid)
	spec := healthTestJob(t, name, node)
	c, owner := createDRAWorkload(t, spec)
	t.Cleanup(func() { _ = c.DeleteWorkload(context.Background(), spec.Ref(), owner) })
	// The taint is transient (the fault may clear, repair may replace the
	// node): the wait goes on until its time is up, and then says why.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	_, err := c.WaitForWorkload(ctx, spec)
	require.Error(t, err)
	var unschedulable *UnschedulableError
	require.False(t, errors.As(err, &unschedulable), "waiting can help: %v", err)
	msg := err.Error()
	t.Log(msg)
	require.Contains(t, msg, "the Job did not complete in time")
	require.Contains(t, msg, "has a fatal GPU fault: the GPU health agent's taint "+gpuhealth.TaintKey+" keeps pods off")
	require.Contains(t, msg, node+": "+gpuhealth.TaintKey+"="+xid+":NoSchedule")
	require.Regexp(t, healthSentence(node, since), msg)
	require.Contains(t, msg, "It can run once the GPU fault on "+node+" clears or node repair replaces it")
}
