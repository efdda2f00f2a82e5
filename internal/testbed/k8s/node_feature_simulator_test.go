package k8s

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// nodeFeatureCRD is NFD's NodeFeature CRD, cut to what the API server
// needs to serve it.
const nodeFeatureCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"nodefeatures.nfd.k8s-sigs.io"},
"spec":{"group":"nfd.k8s-sigs.io","scope":"Namespaced",
 "names":{"kind":"NodeFeature","listKind":"NodeFeatureList","plural":"nodefeatures","singular":"nodefeature"},
 "versions":[{"name":"v1alpha1","served":true,"storage":true,
  "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

func TestGFDLabelsReachANodeOnlyThroughRunningGFDAndNFD(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	ctx := testContext(t, 2*time.Minute)
	client := cluster.Client()
	namespace := createNamespace(ctx, t)

	// A node as EKS registers it: no GPU label at all.
	const node = "nfd-sim-g5-0"
	require.NoError(t, cluster.AddNode(ctx, NodeSpec{Name: node, InstanceType: mustInstanceType("g5.xlarge"), WithoutGPUCapacity: true}))
	t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), node)) })
	require.NoError(t, cluster.WaitForNodesReady(ctx, node))
	bare, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, bare.Labels, gpulabels.Product)
	require.NotContains(t, bare.Labels, gpulabels.NFDPCIPresent)

	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	require.NoError(t, client.Discovery().RESTClient().Post().AbsPath(crds).SetHeader("Content-Type", "application/json").
		Body([]byte(nodeFeatureCRD)).Do(ctx).Error())
	t.Cleanup(func() {
		_ = client.Discovery().RESTClient().Delete().AbsPath(crds, "nodefeatures.nfd.k8s-sigs.io").Do(context.Background()).Error()
	})
	require.NoError(t, wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		served, err := nodeFeatureCRDServed(client)
		return served, err
	}), "the NodeFeature CRD is not served")

	features := corev1.Volume{Name: "features-d", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: nfdFeaturesDir}}}
	featuresMount := corev1.VolumeMount{Name: "features-d", MountPath: nfdFeaturesDir}
	noToken := false
	gfd := nodeFeaturePod(namespace, "gfd", node, corev1.Container{Name: "gfd", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
		Command: []string{"gpu-feature-discovery"}, Env: []corev1.EnvVar{{Name: "USE_NODE_FEATURE_API", Value: "false"}},
		VolumeMounts: []corev1.VolumeMount{featuresMount}}, features)
	gfd.Spec.AutomountServiceAccountToken = &noToken
	worker := nodeFeaturePod(namespace, "worker", node, corev1.Container{Name: "worker", Image: "registry.k8s.io/nfd/node-feature-discovery:v0.19.0",
		Command: []string{"nfd-worker"}, VolumeMounts: []corev1.VolumeMount{featuresMount}}, features)
	master := func(name string, args ...string) *corev1.Pod {
		return nodeFeaturePod(namespace, name, node, corev1.Container{Name: "master", Image: "registry.k8s.io/nfd/node-feature-discovery:v0.19.0",
			Command: []string{"nfd-master"}, Args: args})
	}
	for _, pod := range []*corev1.Pod{gfd, worker, master("master-default")} {
		_, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	// A master that does not allow nvidia.com writes the worker's PCI
	// label and none of GFD's, in the same update.
	labeled := waitForNodeLabels(ctx, t, node, func(l map[string]string) bool { return l[gpulabels.NFDPCIPresent] == "true" })
	require.NotContains(t, labeled, gpulabels.Product, "nvidia.com labels written by a master that denies them")

	// With -extra-label-ns=nvidia.com, GFD's labels arrive.
	require.NoError(t, client.CoreV1().Pods(namespace).Delete(ctx, "master-default", metav1.DeleteOptions{}))
	_, err = client.CoreV1().Pods(namespace).Create(ctx, master("master-nvidia", "-extra-label-ns=nvidia.com"), metav1.CreateOptions{})
	require.NoError(t, err)
	labeled = waitForNodeLabels(ctx, t, node, func(l map[string]string) bool { return l[gpulabels.Product] == "NVIDIA-A10G" })
	require.Equal(t, "1", labeled[gpulabels.Count])
	require.Equal(t, "23028", labeled[gpulabels.Memory])

	// GFD gone: its file goes with it, and the master removes its labels;
	// the worker's stays.
	require.NoError(t, client.CoreV1().Pods(namespace).Delete(ctx, "gfd", metav1.DeleteOptions{}))
	labeled = waitForNodeLabels(ctx, t, node, func(l map[string]string) bool { _, ok := l[gpulabels.Product]; return !ok })
	require.Equal(t, "true", labeled[gpulabels.NFDPCIPresent])
	require.NotContains(t, labeled, gpulabels.Count)

	// The worker gone: its NodeFeature goes with its pod, and so do its labels.
	require.NoError(t, client.CoreV1().Pods(namespace).Delete(ctx, "worker", metav1.DeleteOptions{}))
	waitForNodeLabels(ctx, t, node, func(l map[string]string) bool { _, ok := l[gpulabels.NFDPCIPresent]; return !ok })
}

// nodeFeaturePod is a pod bound to node (no scheduler involved) running c.
func nodeFeaturePod(namespace, name, node string, c corev1.Container, volumes ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{{Key: gpulabels.TaintKey, Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{c},
			Volumes:     volumes,
		},
	}
}

// waitForNodeLabels watches node until done holds for its labels, and
// returns them.
func waitForNodeLabels(ctx context.Context, t *testing.T, node string, done func(map[string]string) bool) map[string]string {
	t.Helper()
	var last map[string]string
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", node).String()}
	_, err := waitFor(ctx, cluster.Client().CoreV1().RESTClient(), "nodes", "", byName, func(n *corev1.Node) bool {
		last = n.Labels
		return done(n.Labels)
	})
	require.NoError(t, err, "waiting for the labels of %s (last %v)", node, last)
	return last
}
