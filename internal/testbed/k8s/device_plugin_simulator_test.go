package k8s

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/retry"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

const sharedGPU corev1.ResourceName = gpulabels.ResourceName + ".shared"

func TestDevicePluginMakesGPUsAllocatable(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 2*time.Minute)
	client := cluster.Client()
	namespace := createNamespace(ctx, t)

	const node = "dp-sim-g5-0"
	require.NoError(t, cluster.AddNode(ctx, NodeSpec{Name: node, InstanceType: mustInstanceType("g5.12xlarge"), WithoutGPUCapacity: true}))
	t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), node)) })
	require.NoError(t, cluster.WaitForNodesReady(ctx, node))
	before, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, before.Status.Allocatable, corev1.ResourceName(gpulabels.ResourceName), "no GPUs before the plugin runs")

	// The plugin with no config advertises the node's 4 GPUs.
	ds := pluginDaemonSet(namespace, node)
	_, err = client.AppsV1().DaemonSets(namespace).Create(ctx, ds, metav1.CreateOptions{})
	require.NoError(t, err)
	waitForAllocatable(ctx, t, node, gpulabels.ResourceName, 4)

	// kwok's node stages patch conditions only: when it marks the node
	// Ready again, the GPUs the plugin registered stay.
	notReady := `{"status":{"conditions":[{"type":"Ready","status":"False","reason":"Test","message":"test"}]}}`
	_, err = client.CoreV1().Nodes().PatchStatus(ctx, node, []byte(notReady))
	require.NoError(t, err)
	require.NoError(t, cluster.WaitForNodesReady(ctx, node))
	after, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	for _, c := range after.Status.Conditions {
		require.NotEqual(t, "Test", c.Reason, "kwok rewrote the conditions")
	}
	requireAllocatable(ctx, t, node, gpulabels.ResourceName, 4)

	// Time-slicing with 4 replicas: 16 nvidia.com/gpu, once the pods roll.
	setPluginConfig(ctx, t, namespace, ds, "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n")
	waitForAllocatable(ctx, t, node, gpulabels.ResourceName, 16)

	// renameByDefault: the shared resource appears, the plain one drops to 0.
	setPluginConfig(ctx, t, namespace, ds, "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n")
	waitForAllocatable(ctx, t, node, sharedGPU, 8)
	waitForAllocatable(ctx, t, node, gpulabels.ResourceName, 0)

	// Deleting the DaemonSet unregisters the plugin: nothing is allocatable.
	require.NoError(t, client.AppsV1().DaemonSets(namespace).Delete(ctx, ds.Name, metav1.DeleteOptions{}))
	waitForAllocatable(ctx, t, node, sharedGPU, 0)
}

func TestDevicePluginLeavesNodesWithoutPluginAlone(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, time.Minute)
	client := cluster.Client()
	namespace := createNamespace(ctx, t)

	// GFD's image also runs GPU Feature Discovery: that is not the plugin.
	ds := pluginDaemonSet(namespace, "gpu-g4dn-0")
	ds.Spec.Template.Spec.Containers[0].Command = []string{"gpu-feature-discovery"}
	_, err := client.AppsV1().DaemonSets(namespace).Create(ctx, ds, metav1.CreateOptions{})
	require.NoError(t, err)
	waitForRunningPod(ctx, t, namespace, "gpu-g4dn-0")
	require.NoError(t, client.AppsV1().DaemonSets(namespace).Delete(ctx, ds.Name, metav1.DeleteOptions{}))

	node, err := client.CoreV1().Nodes().Get(ctx, "gpu-g4dn-0", metav1.GetOptions{})
	require.NoError(t, err)
	requireQuantity(t, "1", node.Status.Allocatable[gpulabels.ResourceName])
}

// pluginDaemonSet runs the device plugin, without a config, on one node.
func pluginDaemonSet(namespace, node string) *appsv1.DaemonSet {
	labels := map[string]string{"app": "nvidia-device-plugin"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "nvidia-device-plugin", Namespace: namespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{corev1.LabelHostname: node},
					Tolerations:  []corev1.Toleration{{Key: gpulabels.TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					Containers:   []corev1.Container{{Name: "nvidia-device-plugin-ctr", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}},
				},
			},
		},
	}
}

// setPluginConfig writes config into the ConfigMap the plugin mounts and
// rolls the DaemonSet's pods with a hash annotation, as gpu_device_plugin does.
func setPluginConfig(ctx context.Context, t *testing.T, namespace string, ds *appsv1.DaemonSet, config string) {
	t.Helper()
	client := cluster.Client()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plugin-config"}, Data: map[string]string{"config.yaml": config}}
	if _, err := client.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		_, err = client.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// The DaemonSet controller writes the status concurrently: retry on conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := client.AppsV1().DaemonSets(namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		spec := &current.Spec.Template.Spec
		spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "plugin-config"}}}}}
		spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/config"}}
		spec.Containers[0].Env = []corev1.EnvVar{{Name: "CONFIG_FILE", Value: "/config/config.yaml"}}
		current.Spec.Template.Annotations = map[string]string{"config-hash": fmt.Sprint(len(config), config[len(config)-8:])}
		_, err = client.AppsV1().DaemonSets(namespace).Update(ctx, current, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err)
}

func requireAllocatable(ctx context.Context, t *testing.T, node string, name corev1.ResourceName, want int64) {
	t.Helper()
	n, err := cluster.Client().CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	q := n.Status.Allocatable[name]
	require.Equal(t, want, q.Value(), "allocatable %s on %s", name, node)
	q = n.Status.Capacity[name]
	require.Equal(t, want, q.Value(), "capacity %s on %s", name, node)
}

// waitForAllocatable watches node until its allocatable name equals want.
func waitForAllocatable(ctx context.Context, t *testing.T, node string, name corev1.ResourceName, want int64) {
	t.Helper()
	var last resource.Quantity
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", node).String()}
	_, err := waitFor(ctx, cluster.Client().CoreV1().RESTClient(), "nodes", "", byName, func(n *corev1.Node) bool {
		last = n.Status.Allocatable[name]
		return last.Value() == want
	})
	require.NoError(t, err, "waiting for %s allocatable %s = %d (last %s)", node, name, want, last.String())
}

func waitForRunningPod(ctx context.Context, t *testing.T, namespace, node string) {
	t.Helper()
	_, err := waitFor(ctx, cluster.Client().CoreV1().RESTClient(), "pods", namespace, metav1.ListOptions{}, func(pod *corev1.Pod) bool {
		return pod.Spec.NodeName == node && pod.Status.Phase == corev1.PodRunning
	})
	require.NoError(t, err, "waiting for a pod running on %s", node)
}

func TestDevicePluginFindsGPUsOfANodeWithoutGFDLabels(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 2*time.Minute)
	namespace := createNamespace(ctx, t)

	// An EKS node group's node: the instance type label, no GFD labels.
	const node = "dp-sim-nogfd-p4d-0"
	require.NoError(t, cluster.AddNode(ctx, NodeSpec{
		Name: node, InstanceType: mustInstanceType("p4d.24xlarge"), WithoutGPUCapacity: true,
	}))
	t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), node)) })
	require.NoError(t, cluster.WaitForNodesReady(ctx, node))

	_, err := cluster.Client().AppsV1().DaemonSets(namespace).Create(ctx, pluginDaemonSet(namespace, node), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForAllocatable(ctx, t, node, gpulabels.ResourceName, 8)
}
