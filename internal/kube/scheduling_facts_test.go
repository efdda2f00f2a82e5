package kube

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

func createNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := cluster.Client().CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// schedulerGaveUp matches what the scheduler says about a pod no node
// takes. Which filter it names per node (taint, selector) depends on the
// nodes the package's other tests left and on when the node controller
// tainted them, so only the scheduler's own summary is asserted.
var schedulerGaveUp = regexp.MustCompile(`^0/\d+ nodes are available: |no nodes available to schedule pods`)

func sharedGPUPod(name, node string, shares int64) *corev1.Pod {
	pod := boundGPUPod(name, node, 0)
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu.shared": *resource.NewQuantity(shares, resource.DecimalSI)}
	return pod
}

// TestListNodeFactsOnRealAPIServer checks the facts Diagnose works from:
// every node, with or without GPUs, and the free amount of the resource
// asked for, here the shared one time-slicing advertises.
func TestListNodeFactsOnRealAPIServer(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	admin := cluster.Client()
	shared := corev1.ResourceName("nvidia.com/gpu.shared")
	t4 := plainGPUNode("facts-t4", "Tesla-T4-SHARED", 1, 15360, map[string]string{
		"nvidia.com/gpu.compute.major": "7", "nvidia.com/gpu.compute.minor": "5",
	})
	t4.Status.Capacity[shared] = resource.MustParse("4")
	t4.Status.Allocatable[shared] = resource.MustParse("4")
	require.NoError(t, createNode(ctx, admin, t4))
	require.NoError(t, createNode(ctx, admin, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "facts-cpu"}}))

	ns := "facts"
	createNamespace(t, ns)
	pods := admin.CoreV1().Pods(ns)
	running, err := pods.Create(ctx, sharedGPUPod("running", "facts-t4", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	running.Status.Phase = corev1.PodRunning
	_, err = pods.UpdateStatus(ctx, running, metav1.UpdateOptions{})
	require.NoError(t, err)
	done, err := pods.Create(ctx, sharedGPUPod("done", "facts-t4", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	done.Status.Phase = corev1.PodSucceeded
	_, err = pods.UpdateStatus(ctx, done, metav1.UpdateOptions{})
	require.NoError(t, err)

	facts, err := ListNodeFacts(ctx, admin, shared)
	require.NoError(t, err)
	byName := map[string]NodeFacts{}
	for _, f := range facts {
		byName[f.Name] = f
	}
	require.Contains(t, byName, "facts-cpu")
	require.False(t, byName["facts-cpu"].HasGPU)
	got := byName["facts-t4"]
	require.True(t, got.HasGPU)
	require.Equal(t, "Tesla-T4-SHARED", got.Product)
	require.Equal(t, "7.5", got.ComputeCapability)
	require.Equal(t, int64(15360), got.MemoryMiB)
	require.Equal(t, int64(4), got.Allocatable)
	require.Equal(t, int64(3), got.Free, "the running pod holds a share; the succeeded one none")
}

// TestFailedSchedulingMessageIsTheSchedulers checks the message comes from
// the real scheduler's event about this pod, not from an event about an
// earlier pod of the same name.
func TestFailedSchedulingMessageIsTheSchedulers(t *testing.T) {
	requireCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := cluster.Client()
	ns := "failed-scheduling"
	createNamespace(t, ns)
	unschedulable := boundGPUPod("train-abc", "", 1)
	unschedulable.Spec.NodeSelector = map[string]string{"no-such-label": "x"}
	pod, err := admin.CoreV1().Pods(ns).Create(ctx, unschedulable, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().Events(ns).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "earlier-pod"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "train-abc", UID: types.UID("an-earlier-pod")},
		Reason:         "FailedScheduling", Message: "about an earlier pod of the same name", Type: corev1.EventTypeWarning,
		FirstTimestamp: metav1.NewTime(time.Now().Add(time.Hour)), LastTimestamp: metav1.NewTime(time.Now().Add(time.Hour)),
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// The test polls for the event; the provider reads it once, after its
	// pod watch saw the scheduler give up.
	var msg string
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		msg, err = FailedSchedulingMessage(ctx, admin, pod)
		return msg != "", err
	})
	require.NoError(t, err)
	require.Regexp(t, schedulerGaveUp, msg)
}

// TestWaitForPodSeesTheSchedulerGiveUp watches pods by label until the real
// scheduler marks one Unschedulable.
func TestWaitForPodSeesTheSchedulerGiveUp(t *testing.T) {
	requireCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := cluster.Client()
	ns := "wait-for-pod"
	createNamespace(t, ns)
	pods := admin.CoreV1().Pods(ns)
	withLabel := func(name string) *corev1.Pod {
		pod := boundGPUPod(name, "", 1)
		pod.Labels = map[string]string{"app": "train"}
		pod.Spec.NodeSelector = map[string]string{"no-such-label": "x"}
		return pod
	}
	_, err := pods.Create(ctx, withLabel("earlier"), metav1.CreateOptions{})
	require.NoError(t, err)

	found := make(chan *corev1.Pod, 1)
	go func() {
		pod, err := WaitForPod(ctx, admin, ns, "app=train", func(p *corev1.Pod) (bool, error) {
			unschedulable, _ := PodUnschedulable(p)
			return unschedulable && p.Name == "later", nil
		})
		if err == nil {
			found <- pod
		}
	}()
	_, err = pods.Create(ctx, withLabel("later"), metav1.CreateOptions{})
	require.NoError(t, err)
	select {
	case pod := <-found:
		require.Equal(t, "later", pod.Name)
		_, msg := PodUnschedulable(pod)
		require.Regexp(t, schedulerGaveUp, msg)
	case <-ctx.Done():
		t.Fatal("WaitForPod did not see the scheduler mark the pod Unschedulable")
	}
}
