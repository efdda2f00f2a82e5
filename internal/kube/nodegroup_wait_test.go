package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

const eksNodeGroupLabel = "eks.amazonaws.com/nodegroup"

// addNodeGroupNodes registers count kwok nodes of a p4d.24xlarge (8 GPUs)
// node group called group, without GPU capacity as a fresh EKS AL2023
// node registers, and deletes them when the test ends.
func addNodeGroupNodes(t *testing.T, group string, count int) []string {
	t.Helper()
	p4d, ok := ec2catalog.Lookup("p4d.24xlarge")
	require.True(t, ok)
	var names []string
	for i := range count {
		name := fmt.Sprintf("%s-%d", group, i)
		require.NoError(t, cluster.AddNode(context.Background(), k8s.NodeSpec{
			Name:               name,
			InstanceType:       p4d,
			WithoutGPUCapacity: true,
			ExtraLabels:        map[string]string{eksNodeGroupLabel: group},
		}))
		t.Cleanup(func() { _ = cluster.DeleteNode(context.Background(), name) })
		names = append(names, name)
	}
	return names
}

// nodeGroupCluster is a Cluster on the testbed that follows the API
// server's reachability, as the provider's does.
func nodeGroupCluster(t *testing.T) *Cluster {
	t.Helper()
	c, err := Connect(cluster.RESTConfig(), ClusterOptions{})
	require.NoError(t, err)
	return c
}

// devicePluginDaemonSet creates, in a namespace of its own, a DaemonSet
// running NVIDIA's device plugin (what the testbed's device-plugin
// simulator recognizes) on the nodes of group, with tolerations and the
// container's resource requests.
func devicePluginDaemonSet(t *testing.T, group string, tolerations []corev1.Toleration, requests corev1.ResourceList) *appsv1.DaemonSet {
	t.Helper()
	ctx := context.Background()
	namespace := "dp-" + group
	namespaces := cluster.Client().CoreV1().Namespaces()
	_, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		// Gone before the next test, which may count the cluster's device plugins.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		require.NoError(t, namespaces.Delete(ctx, namespace, metav1.DeleteOptions{}))
		require.NoError(t, WaitForNamespaceGone(ctx, cluster.Client(), namespace))
	})
	podLabels := map[string]string{LabelName: "nvidia-device-plugin"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "nvidia-device-plugin", Namespace: namespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{eksNodeGroupLabel: group},
					Tolerations:  tolerations,
					Containers: []corev1.Container{{
						Name:         "nvidia-device-plugin-ctr",
						Image:        DefaultDevicePluginImage,
						Command:      []string{"nvidia-device-plugin"},
						Resources:    corev1.ResourceRequirements{Requests: requests},
						VolumeMounts: []corev1.VolumeMount{{Name: "device-plugins", MountPath: "/var/lib/kubelet/device-plugins"}},
					}},
					Volumes: []corev1.Volume{{Name: "device-plugins", VolumeSource: corev1.VolumeSource{
						HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kubelet/device-plugins"},
					}}},
				},
			},
		},
	}
	created, err := cluster.Client().AppsV1().DaemonSets(namespace).Create(ctx, ds, metav1.CreateOptions{})
	require.NoError(t, err)
	return created
}

var gpuTaintToleration = corev1.Toleration{Key: gpulabels.TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

func TestWaitForNodeGroupReady(t *testing.T) {
	requireCluster(t)
	names := addNodeGroupNodes(t, "ng-ready", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got, err := nodeGroupCluster(t).WaitForNodeGroup(ctx, NodeGroupWait{
		Selector: map[string]string{eksNodeGroupLabel: "ng-ready"},
		Count:    2,
		Until:    NodeGroupReady,
		Describe: `node group "ng-ready"`,
	})
	require.NoError(t, err)
	require.Equal(t, 2, got.Ready)
	require.Equal(t, names, got.Nodes)
	require.Zero(t, got.AllocatableGPUs, "the nodes registered without GPU capacity")
}

func TestWaitForNodeGroupPicksUpNodesThatRegisterLater(t *testing.T) {
	requireCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The nodes register once the wait watches, so only the watch can
	// see them.
	watching := make(chan struct{})
	var once sync.Once
	cfg := cluster.RESTConfig()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Path == "/api/v1/nodes" && r.URL.Query().Get("watch") == "true" {
				once.Do(func() { close(watching) })
			}
			return rt.RoundTrip(r)
		})
	}
	c, err := Connect(cfg, ClusterOptions{})
	require.NoError(t, err)
	type result struct {
		nodes NodeGroupNodes
		err   error
	}
	done := make(chan result, 1)
	go func() {
		nodes, err := c.WaitForNodeGroup(ctx, NodeGroupWait{
			Selector: map[string]string{eksNodeGroupLabel: "ng-late"},
			Count:    2,
			Until:    NodeGroupReady,
			Describe: `node group "ng-late"`,
		})
		done <- result{nodes, err}
	}()
	select {
	case <-watching:
	case r := <-done:
		t.Fatalf("the wait ended before any node registered: %+v, %v", r.nodes, r.err)
	}
	names := addNodeGroupNodes(t, "ng-late", 2)
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, 2, r.nodes.Ready)
	require.Equal(t, names, r.nodes.Nodes)
}

func TestWaitForNodeGroupGPUsAllocatableOnceTheDevicePluginRuns(t *testing.T) {
	requireCluster(t)
	names := addNodeGroupNodes(t, "ng-gpus", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := nodeGroupCluster(t)
	w := NodeGroupWait{
		Selector:    map[string]string{eksNodeGroupLabel: "ng-gpus"},
		Count:       1,
		GPUsPerNode: 8,
		Until:       NodeGroupGPUsAllocatable,
		Describe:    `node group "ng-gpus"`,
	}
	type result struct {
		nodes NodeGroupNodes
		err   error
	}
	done := make(chan result, 1)
	go func() {
		nodes, err := c.WaitForNodeGroup(ctx, w)
		done <- result{nodes, err}
	}()
	devicePluginDaemonSet(t, "ng-gpus", []corev1.Toleration{gpuTaintToleration}, nil)
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, NodeGroupNodes{Ready: 1, AllocatableGPUs: 8, Nodes: names}, r.nodes)

	read, err := c.ReadNodeGroupNodes(context.Background(), w.Selector)
	require.NoError(t, err)
	require.Equal(t, r.nodes, read)
}

func TestWaitForNodeGroupTimeoutNamesTheNodeWithoutDevicePlugin(t *testing.T) {
	requireCluster(t)
	names := addNodeGroupNodes(t, "ng-noplugin", 1)
	require.NoError(t, cluster.WaitForNodesReady(context.Background(), names...))
	// A bound on the wait, not a timing assertion: the node never gets GPUs.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	got, err := nodeGroupCluster(t).WaitForNodeGroup(ctx, NodeGroupWait{
		Selector:    map[string]string{eksNodeGroupLabel: "ng-noplugin"},
		Count:       2,
		GPUsPerNode: 8,
		Until:       NodeGroupGPUsAllocatable,
		Describe:    `node group "ng-noplugin" of cluster "testbed"`,
	})
	t.Log(err)
	var waitErr *NodeGroupWaitError
	require.ErrorAs(t, err, &waitErr)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 1, got.Ready)
	msg := err.Error()
	require.Contains(t, msg, `timed out waiting for node group "ng-noplugin" of cluster "testbed" to have 2 nodes Ready, each with at least 8 allocatable nvidia.com/gpu`)
	require.Contains(t, msg, "1 of 2 nodes registered, 1 Ready, 0 with 8 allocatable nvidia.com/gpu")
	require.Contains(t, msg, "not registered yet: 1 of 2 nodes have joined the cluster (label selector eks.amazonaws.com/nodegroup=ng-noplugin)")
	require.Contains(t, msg, names[0]+": Ready, allocatable nvidia.com/gpu 0 of 8: no NVIDIA device plugin DaemonSet in the cluster")
	require.Contains(t, msg, "create gpu_device_plugin before the node group (depends_on), or use a Bottlerocket NVIDIA AMI, whose OS runs the device plugin")
}

func TestWaitForNodeGroupTimeoutNamesTheTaintTheDevicePluginDoesNotTolerate(t *testing.T) {
	requireCluster(t)
	names := addNodeGroupNodes(t, "ng-taint", 1)
	require.NoError(t, cluster.WaitForNodesReady(context.Background(), names...))
	ds := devicePluginDaemonSet(t, "ng-taint", nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	_, err := nodeGroupCluster(t).WaitForNodeGroup(ctx, NodeGroupWait{
		Selector:    map[string]string{eksNodeGroupLabel: "ng-taint"},
		Count:       1,
		GPUsPerNode: 8,
		Until:       NodeGroupGPUsAllocatable,
		Describe:    `node group "ng-taint"`,
	})
	t.Log(err)
	var waitErr *NodeGroupWaitError
	require.ErrorAs(t, err, &waitErr)
	require.Contains(t, err.Error(), fmt.Sprintf("%s: Ready, allocatable nvidia.com/gpu 0 of 8: no NVIDIA device plugin pod on it (DaemonSet %s/%s: it does not tolerate the node's taint nvidia.com/gpu=true:NoSchedule)",
		names[0], ds.Namespace, ds.Name))
	require.Contains(t, err.Error(), "Fix: let the device plugin's DaemonSet place a pod on these nodes (gpu_device_plugin's tolerations, node_selector and gpu_node_affinity)")
	require.NotContains(t, err.Error(), "create gpu_device_plugin", "a device plugin exists: creating one is not the fix")
}

func TestWaitForNodeGroupWithNoNodesExpectedReturnsAtOnce(t *testing.T) {
	// No API server behind it: a wait for zero nodes must not ask one.
	c := &Cluster{}
	got, err := c.WaitForNodeGroup(context.Background(), NodeGroupWait{
		Selector: map[string]string{eksNodeGroupLabel: "empty"},
		Until:    NodeGroupReady,
		Describe: `node group "empty"`,
	})
	require.NoError(t, err)
	require.Equal(t, NodeGroupNodes{}, got)
}

func TestWaitForNodeGroupRejectsAnIncompleteWait(t *testing.T) {
	c := &Cluster{}
	for _, tt := range []struct {
		description string
		wait        NodeGroupWait
		want        string
	}{
		{"an empty selector would select every node", NodeGroupWait{Count: 1, Until: NodeGroupReady, Describe: "g"}, "the node label selector is empty"},
		{"an unknown condition is named with the valid ones", NodeGroupWait{Selector: map[string]string{"a": "b"}, Count: 1, Until: "healthy", Describe: "g"}, `unknown condition "healthy"; valid values are "ready" and "gpus_allocatable"`},
		{"gpus_allocatable needs a GPU count", NodeGroupWait{Selector: map[string]string{"a": "b"}, Count: 1, Until: NodeGroupGPUsAllocatable, Describe: "g"}, "gpus_allocatable needs a number of GPUs per node"},
	} {
		t.Run(tt.description, func(t *testing.T) {
			_, err := c.WaitForNodeGroup(context.Background(), tt.wait)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestWaitForNodeGroupEndsOnAForbiddenList(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	// A service account bound to no role: the API server answers 403.
	accounts := cluster.Client().CoreV1().ServiceAccounts(metav1.NamespaceDefault)
	_, err := accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ng-forbidden"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = accounts.Delete(context.Background(), "ng-forbidden", metav1.DeleteOptions{}) })
	request, err := accounts.CreateToken(ctx, "ng-forbidden", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := cluster.RESTConfig()
	cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = nil, nil, "", ""
	cfg.BearerToken = request.Status.Token
	c, err := Connect(cfg, ClusterOptions{})
	require.NoError(t, err)

	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err = c.WaitForNodeGroup(waitCtx, NodeGroupWait{
		Selector: map[string]string{eksNodeGroupLabel: "ng-forbidden"},
		Count:    1,
		Until:    NodeGroupReady,
		Describe: `node group "ng-forbidden"`,
	})
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	require.NoError(t, waitCtx.Err(), "the wait ended on the 403, not on its deadline")
	require.ErrorContains(t, err, `waiting for node group "ng-forbidden": listing its nodes (label selector eks.amazonaws.com/nodegroup=ng-forbidden)`)
	require.ErrorContains(t, err, `cannot list resource "nodes"`)
	require.NotContains(t, err.Error(), request.Status.Token)
}

func TestWaitForNodeGroupEndsWhenTheAPIServerStaysUnreachable(t *testing.T) {
	requireCluster(t)
	c, proxy := proxiedCluster(t, 2*time.Second)
	proxy.cut()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := c.WaitForNodeGroup(ctx, NodeGroupWait{
		Selector: map[string]string{eksNodeGroupLabel: "ng-unreachable"},
		Count:    1,
		Until:    NodeGroupReady,
		Describe: `node group "ng-unreachable"`,
	})
	require.True(t, IsUnreachable(err), "%v", err)
	require.NoError(t, ctx.Err(), "the wait ended on the unreachable API server, not on its deadline")
	var waitErr *NodeGroupWaitError
	require.False(t, errors.As(err, &waitErr), "an unreachable API server is no node group timeout: %v", err)
}

func TestWaitForNodeGroupTimeoutSaysWhyTheDevicePluginPodIsPending(t *testing.T) {
	requireCluster(t)
	names := addNodeGroupNodes(t, "ng-pending", 1)
	require.NoError(t, cluster.WaitForNodesReady(context.Background(), names...))
	// More CPU than a p4d.24xlarge has: the scheduler leaves the pod Pending.
	ds := devicePluginDaemonSet(t, "ng-pending", []corev1.Toleration{gpuTaintToleration}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")})
	pods := cluster.Client().CoreV1().Pods(ds.Namespace)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := WaitForList(ctx, ListWatchFunctions[*corev1.PodList]{List: pods.List, Watch: pods.Watch}, nil, func(pod *corev1.Pod, deleted bool) (bool, error) {
		return !deleted && slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse
		}), nil
	})
	require.NoError(t, err, "the scheduler never marked the device plugin pod unschedulable")

	waitCtx, cancelWait := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancelWait()
	_, err = nodeGroupCluster(t).WaitForNodeGroup(waitCtx, NodeGroupWait{
		Selector:    map[string]string{eksNodeGroupLabel: "ng-pending"},
		Count:       1,
		GPUsPerNode: 8,
		Until:       NodeGroupGPUsAllocatable,
		Describe:    `node group "ng-pending"`,
	})
	t.Log(err)
	var waitErr *NodeGroupWaitError
	require.ErrorAs(t, err, &waitErr)
	require.Contains(t, err.Error(), fmt.Sprintf("%s: Ready, allocatable nvidia.com/gpu 0 of 8: its device plugin (DaemonSet %s/%s) pod ", names[0], ds.Namespace, ds.Name))
	require.Contains(t, err.Error(), "is Pending: Unschedulable: ")
	require.Contains(t, err.Error(), "Insufficient cpu")
	require.NotContains(t, err.Error(), "create gpu_device_plugin before the node group", "a device plugin exists: creating one is not the fix")
}

func TestWaitForNodeGroupTimeoutSaysWhyANodeIsNotReady(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	// A node no kwok manages: its Ready condition is what the test writes.
	node := plainGPUNode("ng-notready-0", "NVIDIA-A100-SXM4-40GB", 8, 40960, map[string]string{eksNodeGroupLabel: "ng-notready"})
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		Message: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
	}}
	require.NoError(t, createNode(ctx, cluster.Client(), node))
	t.Cleanup(func() { _ = cluster.DeleteNode(context.Background(), node.Name) })

	waitCtx, cancel := context.WithTimeout(ctx, 6*time.Second)
	defer cancel()
	got, err := nodeGroupCluster(t).WaitForNodeGroup(waitCtx, NodeGroupWait{
		Selector: map[string]string{eksNodeGroupLabel: "ng-notready"},
		Count:    1,
		Until:    NodeGroupReady,
		Describe: `node group "ng-notready"`,
	})
	t.Log(err)
	var waitErr *NodeGroupWaitError
	require.ErrorAs(t, err, &waitErr)
	require.Equal(t, NodeGroupNodes{Nodes: []string{node.Name}}, got)
	require.Contains(t, err.Error(), `timed out waiting for node group "ng-notready" to have 1 node Ready: 1 of 1 node registered, 0 Ready:`)
	// The node lifecycle controller may have marked it Unknown since, as it
	// does a node whose kubelet stopped posting its status.
	require.Contains(t, err.Error(), "\n  - ng-notready-0: NotReady (Ready is ")
	require.NotContains(t, err.Error(), "create gpu_device_plugin", "a NotReady node needs no device plugin first")
}

func TestWaitForNodeGroupEndsOnRejectedCredentials(t *testing.T) {
	requireCluster(t)
	cfg := cluster.RESTConfig()
	cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = nil, nil, "", ""
	cfg.BearerToken = "not-a-token-the-api-server-knows"
	c, err := Connect(cfg, ClusterOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = c.WaitForNodeGroup(ctx, NodeGroupWait{
		Selector: map[string]string{eksNodeGroupLabel: "ng-unauthorized"},
		Count:    1,
		Until:    NodeGroupReady,
		Describe: `node group "ng-unauthorized"`,
	})
	var rejection *CredentialsError
	require.ErrorAs(t, err, &rejection)
	require.NoError(t, ctx.Err(), "the wait ended on the 401, not on its deadline")
	require.ErrorContains(t, err, "rejected the credentials (HTTP 401 Unauthorized)")
	require.NotContains(t, err.Error(), cfg.BearerToken)
}

func TestWaitForNodeGroupEndsAtOnceOnAGroupTaintNoDevicePluginTolerates(t *testing.T) {
	requireCluster(t)
	names := addNodeGroupNodes(t, "ng-blocked", 1)
	require.NoError(t, cluster.WaitForNodesReady(context.Background(), names...))
	ds := devicePluginDaemonSet(t, "ng-blocked", nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seen, err := nodeGroupCluster(t).WaitForNodeGroup(ctx, NodeGroupWait{
		Selector:    map[string]string{eksNodeGroupLabel: "ng-blocked"},
		Count:       1,
		GPUsPerNode: 8,
		Until:       NodeGroupGPUsAllocatable,
		Describe:    `node group "ng-blocked"`,
		TaintKeys:   []string{gpulabels.TaintKey},
	})
	t.Log(err)
	require.NoError(t, ctx.Err(), "the wait ended on the untolerated taint, not on its deadline")
	require.ErrorIs(t, err, ErrNoDevicePluginCanRun)
	var waitErr *NodeGroupWaitError
	require.ErrorAs(t, err, &waitErr)
	require.Equal(t, NodeGroupNodes{Ready: 1, Nodes: names}, seen)
	require.Equal(t, seen, waitErr.Seen)
	require.Contains(t, err.Error(), `stopped waiting for node group "ng-blocked" to have 1 node Ready, each with at least 8 allocatable nvidia.com/gpu, which cannot happen as configured: 1 of 1 node registered, 1 Ready, 0 with 8 allocatable nvidia.com/gpu:`)
	require.Contains(t, err.Error(), fmt.Sprintf("\n  - no NVIDIA device plugin pod can run on node %s: DaemonSet %s/%s does not tolerate its taint nvidia.com/gpu=true:NoSchedule",
		names[0], ds.Namespace, ds.Name))
	require.Contains(t, err.Error(), "\nFix: add a toleration for nvidia.com/gpu=true:NoSchedule to the device plugin (gpu_device_plugin's tolerations)")
}

func TestWaitForNodeGroupDoesNotEndEarlyForADevicePluginMeantForOtherNodes(t *testing.T) {
	requireCluster(t)
	names := addNodeGroupNodes(t, "ng-other", 1)
	require.NoError(t, cluster.WaitForNodesReady(context.Background(), names...))
	devicePluginDaemonSet(t, "ng-elsewhere", nil, nil) // selects another group's nodes: one for these may come
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	_, err := nodeGroupCluster(t).WaitForNodeGroup(ctx, NodeGroupWait{
		Selector:    map[string]string{eksNodeGroupLabel: "ng-other"},
		Count:       1,
		GPUsPerNode: 8,
		Until:       NodeGroupGPUsAllocatable,
		Describe:    `node group "ng-other"`,
		TaintKeys:   []string{gpulabels.TaintKey},
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotErrorIs(t, err, ErrNoDevicePluginCanRun)
	require.Contains(t, err.Error(), "timed out waiting for")
}
