package kube

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// TestListInventoryOnRealAPIServer checks what only a real API server can
// show: the field selector keeps bound, non-terminated pods; the label
// selector is applied server-side; pagination is followed; and the cost is
// one list of nodes and one of pods per page.
func TestListInventoryOnRealAPIServer(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	admin := cluster.Client()

	// Other tests of this package share the API server: this one labels its
	// nodes and only looks at them.
	const suite = "suite=inventory"
	mine := map[string]string{"suite": "inventory"}
	for _, n := range []*corev1.Node{
		plainGPUNode("inv-a100-0", "NVIDIA-A100-SXM4-40GB", 8, 40960, mine),
		plainGPUNode("inv-a100-1", "NVIDIA-A100-SXM4-40GB", 8, 40960, mine),
		plainGPUNode("inv-h100-0", "NVIDIA-H100-80GB-HBM3", 8, 81559, map[string]string{"suite": "inventory", "pool": "h100"}),
		{ObjectMeta: metav1.ObjectMeta{Name: "inv-cpu-0", Labels: mine}},
	} {
		require.NoError(t, createNode(ctx, admin, n))
	}
	ns := "inventory"
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)

	pods := admin.CoreV1().Pods(ns)
	create := func(pod *corev1.Pod, phase corev1.PodPhase) {
		created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
		if phase != "" {
			created.Status.Phase = phase
			_, err = pods.UpdateStatus(ctx, created, metav1.UpdateOptions{})
			require.NoError(t, err)
		}
	}
	create(boundGPUPod("running-3", "inv-a100-0", 3), corev1.PodRunning)
	create(boundGPUPod("pending-2", "inv-a100-0", 2), "") // bound, not started yet: holds its GPUs
	create(boundGPUPod("done-4", "inv-a100-0", 4), corev1.PodSucceeded)
	create(boundGPUPod("failed-4", "inv-a100-1", 4), corev1.PodFailed)
	create(boundGPUPod("h100-8", "inv-h100-0", 8), corev1.PodRunning)
	unbound := boundGPUPod("unbound-1", "", 1)
	unbound.Spec.NodeSelector = map[string]string{"no-such-label": "x"}
	create(unbound, "")

	client, requests := countingClientByResource(t)
	inv, err := clusterOf(client).ListInventory(ctx, InventoryOptions{PageSize: 2, LabelSelector: suite})
	require.NoError(t, err)
	// One paginated LIST each of the selected nodes (3 GPU nodes + 1 CPU
	// node), of the pods the field selector keeps (this test's 3 and any
	// another test left running) and of the DRA driver's ResourceSlices
	// (other tests'), in pages of 2 as the server cuts them (a selector
	// can leave a page short); no ResourceClaims: no selected node
	// publishes DRA devices.
	require.Equal(t, map[string]int64{
		"nodes": listPagesOf(t, func(o metav1.ListOptions) (string, error) {
			o.LabelSelector = suite
			l, err := admin.CoreV1().Nodes().List(ctx, o)
			return l.Continue, err
		}),
		"pods": listPagesOf(t, func(o metav1.ListOptions) (string, error) {
			o.FieldSelector = nonTerminatedBoundPods
			l, err := admin.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
			return l.Continue, err
		}),
		"resourceslices": listPagesOf(t, func(o metav1.ListOptions) (string, error) {
			o.FieldSelector = "spec.driver=" + nvdra.DriverName
			l, err := admin.ResourceV1().ResourceSlices().List(ctx, o)
			return l.Continue, err
		}),
	}, requests.byResource(), "LIST requests in pages of 2")

	byName := map[string]GPUNode{}
	for _, n := range inv.Nodes {
		byName[n.Name] = n
	}
	require.Len(t, inv.Nodes, 3, "the CPU node is not a GPU node")
	require.Equal(t, int64(5), byName["inv-a100-0"].Allocated, "running and pending pods count, the succeeded one does not")
	require.Equal(t, int64(3), byName["inv-a100-0"].Free)
	require.Equal(t, int64(0), byName["inv-a100-1"].Allocated, "a failed pod holds nothing")
	require.Equal(t, int64(0), byName["inv-h100-0"].Free)
	require.Equal(t, "8.0", byName["inv-h100-0"].ComputeCapability)
	require.True(t, byName["inv-h100-0"].Ready)
	require.Equal(t, Totals{Nodes: 3, GPUs: 24, Allocatable: 24, Allocated: 13, Free: 11, DevicePluginNodes: 3}, inv.Totals())
	require.True(t, inv.DRAServed)

	selected, err := clusterOf(client).ListInventory(ctx, InventoryOptions{LabelSelector: suite + ",pool=h100"})
	require.NoError(t, err)
	require.Len(t, selected.Nodes, 1)
	require.Equal(t, "inv-h100-0", selected.Nodes[0].Name)

	_, err = clusterOf(client).ListInventory(ctx, InventoryOptions{LabelSelector: "pool in (("})
	require.Error(t, err, "a bad selector is the server's error, returned, not swallowed")
}
