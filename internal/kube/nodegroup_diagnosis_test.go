package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDescribeLackingNode(t *testing.T) {
	for _, tt := range []struct {
		description string
		node        corev1.Node
		want        string
	}{
		{
			description: "a NotReady node is described by its Ready condition's reason and message",
			node: corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "container runtime network not ready: NetworkReady=false",
			}}}},
			want: "n1: NotReady (Ready is False): KubeletNotReady: container runtime network not ready: NetworkReady=false",
		},
		{
			description: "a node whose kubelet has not reported says so",
			node:        corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}},
			want:        "n2: NotReady: no Ready condition yet (its kubelet has not reported)",
		},
		{
			description: "a Ready node that is cordoned says so",
			node: corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3"}, Spec: corev1.NodeSpec{Unschedulable: true},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
			want: "n3: Ready but cordoned (spec.unschedulable); `kubectl uncordon n3` if nothing drains it",
		},
		{
			description: "a Ready, schedulable node lacks nothing but, maybe, GPUs",
			node:        corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n4"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
			want:        "",
		},
	} {
		t.Run(tt.description, func(t *testing.T) {
			require.Equal(t, tt.want, describeLackingNode(&tt.node))
		})
	}
}

func TestNodeGroupStateCountsFollowEachChange(t *testing.T) {
	ready := func(name string, gpus int64, cordoned bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		n.Status.Allocatable = corev1.ResourceList{ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}
		return n
	}
	w := NodeGroupWait{Selector: map[string]string{"g": "1"}, Count: 2, GPUsPerNode: 8, Until: NodeGroupGPUsAllocatable}
	var g nodeGroupState
	g.observe(ready("a", 0, false), false, 8)
	g.observe(ready("b", 8, false), false, 8)
	require.Equal(t, NodeGroupNodes{Ready: 2, AllocatableGPUs: 8, Nodes: []string{"a", "b"}}, g.nodes())
	require.False(t, g.satisfies(w))
	require.Equal(t, []string{"a"}, g.lacking(w))

	g.observe(ready("a", 8, false), false, 8)
	require.True(t, g.satisfies(w))
	require.Empty(t, g.lacking(w))

	g.observe(ready("b", 8, true), false, 8) // cordoned: no longer counts
	require.Equal(t, NodeGroupNodes{Ready: 1, AllocatableGPUs: 8, Nodes: []string{"a", "b"}}, g.nodes())
	require.False(t, g.satisfies(w))

	g.observe(ready("a", 8, false), true, 8) // deleted
	require.Equal(t, NodeGroupNodes{Ready: 0, AllocatableGPUs: 0, Nodes: []string{"b"}}, g.nodes())
	require.Equal(t, []string{"b"}, g.lacking(w))
}
