package kube

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// reportHealth writes node's AcceleratedHardwareReady condition as the
// agent does (a strategic merge of nodes/status: other conditions stay).
func reportHealth(t *testing.T, client kubernetes.Interface, node string, status corev1.ConditionStatus, reason string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: gpuhealth.ConditionType, Status: status, Reason: reason, Message: "reported by the test",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}}}})
	require.NoError(t, err)
	_, err = client.CoreV1().Nodes().PatchStatus(context.Background(), node, patch)
	require.NoError(t, err)
}

func TestHealthAgentLifecycle(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	m5, ok := ec2catalog.Lookup("m5.xlarge")
	require.True(t, ok)
	nodes := []string{"ha-life-0", "ha-life-1"}
	for _, name := range append([]string{"ha-life-other"}, nodes...) {
		label := "lifecycle"
		if name == "ha-life-other" {
			label = "elsewhere"
		}
		require.NoError(t, cluster.AddNode(ctx, k8s.NodeSpec{Name: name, InstanceType: m5, ExtraLabels: map[string]string{"ha-test": label}}))
		t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), name)) })
	}
	require.NoError(t, cluster.WaitForNodesReady(ctx, nodes...))

	client := cluster.Client()
	c := clusterOf(client)
	spec := testDevicePluginSpec()
	spec.Namespace = "ha-lifecycle"
	spec.NodeSelector = map[string]string{"ha-test": "lifecycle"}
	spec.GPUNodeAffinity = false
	spec.HealthAgent = &HealthAgentSpec{Image: "registry.example/gpu-bootstrap:dev", Settings: gpuhealth.DefaultSettings()}
	owner, err := NewOwnership()
	require.NoError(t, err)

	created, _, err := c.CreateDevicePlugin(ctx, spec, owner)
	require.NoError(t, err)
	require.True(t, created.Exists)
	t.Cleanup(func() {
		_, _ = c.DeleteDevicePlugin(context.Background(), spec, owner, NamespaceDeletion{Created: true, EvenIfNotEmpty: true})
	})
	require.NoError(t, c.WaitForDaemonSetRollout(ctx, spec.Namespace, spec.HealthAgentName()))
	role, err := client.RbacV1().ClusterRoles().Get(ctx, "ha-lifecycle:plugin-health-agent", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, owner.ID, role.Annotations[AnnotationOwner])

	// The wait ends once both nodes report, whatever the status; the node
	// elsewhere runs no agent and is not waited for.
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.WaitForHealthReported(waitCtx, spec) }()
	reportHealth(t, client, "ha-life-0", corev1.ConditionTrue, "NvidiaGPUIsReady")
	reportHealth(t, client, "ha-life-1", corev1.ConditionFalse, "NvidiaXID79Error")
	require.NoError(t, <-done)

	live, found, err := c.ReadDevicePlugin(ctx, spec.Namespace, spec.Name, owner)
	require.NoError(t, err)
	require.True(t, found)
	require.Empty(t, live.HealthAgentProblem)
	require.Equal(t, spec.HealthAgent, live.Spec.HealthAgent, "read back as deployed")

	// Taint on: the DaemonSet's arguments change (its pods roll).
	prior := spec
	agent := *spec.HealthAgent
	agent.Settings.Taint = true
	spec.HealthAgent = &agent
	_, err = c.UpdateDevicePlugin(ctx, spec, prior, owner)
	require.NoError(t, err)
	ds, err := client.AppsV1().DaemonSets(spec.Namespace).Get(ctx, spec.HealthAgentName(), metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, ds.Spec.Template.Spec.Containers[0].Args, "--taint=true")

	// The block removed: every object of the agent goes.
	prior = spec
	spec.HealthAgent = nil
	_, err = c.UpdateDevicePlugin(ctx, spec, prior, owner)
	require.NoError(t, err)
	require.NoError(t, WaitForDaemonSetGone(ctx, client, spec.Namespace, prior.HealthAgentName()))
	for name, get := range map[string]func() error{
		"ServiceAccount": func() error {
			_, err := client.CoreV1().ServiceAccounts(spec.Namespace).Get(ctx, prior.HealthAgentName(), metav1.GetOptions{})
			return err
		},
		"Service": func() error {
			_, err := client.CoreV1().Services(spec.Namespace).Get(ctx, prior.HealthAgentName(), metav1.GetOptions{})
			return err
		},
		"ClusterRole": func() error {
			_, err := client.RbacV1().ClusterRoles().Get(ctx, prior.healthAgentClusterRoleName(), metav1.GetOptions{})
			return err
		},
		"ClusterRoleBinding": func() error {
			_, err := client.RbacV1().ClusterRoleBindings().Get(ctx, prior.healthAgentClusterRoleName(), metav1.GetOptions{})
			return err
		},
	} {
		require.True(t, apierrors.IsNotFound(get()), "%s is deleted with the block", name)
	}
	require.NoError(t, c.WaitForHealthReported(ctx, spec), "without the agent there is nothing to wait for")

	// Back on, then the whole deployment deleted: nothing of the agent is left.
	prior = spec
	spec.HealthAgent = &agent
	_, err = c.UpdateDevicePlugin(ctx, spec, prior, owner)
	require.NoError(t, err)
	deleteCtx, cancelDelete := context.WithTimeout(ctx, time.Minute)
	defer cancelDelete()
	_, err = c.DeleteDevicePlugin(deleteCtx, spec, owner, NamespaceDeletion{Created: true})
	require.NoError(t, err)
	_, err = client.RbacV1().ClusterRoles().Get(ctx, spec.healthAgentClusterRoleName(), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the cluster-wide ClusterRole goes with the deployment: %v", err)
	_, err = client.CoreV1().Namespaces().Get(ctx, spec.Namespace, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the namespace held nothing else: %v", err)
}

// TestHealthAgentWaitDiagnosis reads what the wait says of each node that
// has not reported, from the pods the agent's DaemonSet has there.
func TestHealthAgentWaitDiagnosis(t *testing.T) {
	spec := testHealthAgentSpec()
	labels := spec.selectorLabels(gpuhealth.ComponentHealthAgent)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: spec.Namespace, Name: spec.HealthAgentName(), Generation: 1},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}},
		Status:     appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3},
	}
	pod := func(name, node string, phase corev1.PodPhase, ready bool) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: spec.Namespace, Name: name, Labels: labels, UID: types.UID(name)},
			Spec:       corev1.PodSpec{NodeName: node},
			Status:     corev1.PodStatus{Phase: phase},
		}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		} else {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "health-agent",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "pull access denied"}}}}
		}
		return p
	}
	node := func(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	client := fake.NewClientset(ds,
		pod("agent-a", "gpu-a", corev1.PodRunning, true), pod("agent-b", "gpu-b", corev1.PodPending, false),
		node("gpu-a"), node("gpu-b"), node("gpu-c"))

	ready := describeNodeNotReporting(context.Background(), client, ds, "gpu-a")
	require.Contains(t, ready, "gpu-a: its health agent pod agent-a is Running and ready but has not written the condition")
	require.Contains(t, ready, "kubectl logs -n nvidia agent-a")
	pending := describeNodeNotReporting(context.Background(), client, ds, "gpu-b")
	require.Equal(t, "gpu-b: its health agent pod agent-b is Pending; container health-agent is waiting: ImagePullBackOff: pull access denied", pending)
	require.Equal(t, "gpu-c: no health agent pod is bound to it", describeNodeNotReporting(context.Background(), client, ds, "gpu-c"))

	// The wait itself: two nodes with a pod; one has reported.
	n := node("gpu-a")
	n.Status.Conditions = []corev1.NodeCondition{{Type: gpuhealth.ConditionType, Status: corev1.ConditionUnknown, Reason: "NvidiaDriverNotLoaded"}}
	_, err := client.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{})
	require.NoError(t, err)
	short, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err = waitForHealthReported(short, client, spec)
	require.True(t, IsNotReady(err), "%v", err)
	require.Contains(t, err.Error(), "1 of 2 nodes running the GPU health agent report no AcceleratedHardwareReady condition:\n  - gpu-b: its health agent pod agent-b is Pending")
	require.NotContains(t, err.Error(), "gpu-a:", "an Unknown condition is a report")
}
