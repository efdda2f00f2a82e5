package k8s

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// draResources are what resource.k8s.io/v1 serves; NVIDIA's DRA driver and
// the provider use all four.
var draResources = []string{"deviceclasses", "resourceclaims", "resourceclaimtemplates", "resourceslices"}

// Both releases the testbed runs serve DRA's GA API by default.
func TestTheClusterServesResourceV1(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	list, err := cluster.Client().Discovery().ServerResourcesForGroupVersion(resourcev1.SchemeGroupVersion.String())
	require.NoError(t, err, "Kubernetes %s serves %s", cluster.KubernetesVersion(), resourcev1.SchemeGroupVersion)
	var served []string
	for _, r := range list.APIResources {
		served = append(served, r.Name)
	}
	require.Subset(t, served, draResources)
}

// WithoutDRA is a cluster as a 1.33 one runs with its defaults: no
// resource.k8s.io at all, and pods' resourceClaims dropped by the API
// server, as the DynamicResourceAllocation gate being off does.
func TestWithoutDRAServesNoResourceAPI(t *testing.T) {
	c := New(Options{WithoutDRA: true, Nodes: []NodeSpec{{Name: "gpu-g5-0", InstanceType: mustInstanceType("g5.xlarge")}}})
	testbed.StartForTest(t, testbed.Options{Backends: []testbed.Backend{c}})
	require.Equal(t, testbed.OldestKubernetesVersion, c.KubernetesVersion(), "only the oldest release can turn DRA off")
	ctx := testContext(t, time.Minute)

	groups, err := c.Client().Discovery().ServerGroups()
	require.NoError(t, err)
	for _, group := range groups.Groups {
		require.NotEqual(t, resourcev1.GroupName, group.Name, "served versions: %v", group.Versions)
	}
	_, err = c.Client().ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	require.Error(t, err, "a client asking for DeviceClasses gets the 404 a cluster without DRA answers")

	namespace := "default"
	pod, err := c.Client().CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "claims"},
		Spec: corev1.PodSpec{
			Containers:     []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu")}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Empty(t, pod.Spec.ResourceClaims, "with the gate off the API server drops a pod's resource claims")
}

func TestWithoutDRANeedsTheOldestRelease(t *testing.T) {
	_, err := Options{WithoutDRA: true, KubernetesVersion: testbed.KubernetesVersion}.kubernetesVersion()
	require.EqualError(t, err, "starting Kubernetes "+testbed.KubernetesVersion+
		" without DRA: its DynamicResourceAllocation gate is locked on (since 1.35); only "+testbed.OldestKubernetesVersion+" can turn it off")

	version, err := Options{WithoutDRA: true}.kubernetesVersion()
	require.NoError(t, err)
	require.Equal(t, testbed.OldestKubernetesVersion, version, "WithoutDRA alone picks the release that can")

	t.Setenv(testbed.KubernetesChoiceEnv, "oldest")
	version, err = Options{KubernetesVersion: testbed.KubernetesVersion}.kubernetesVersion()
	require.NoError(t, err)
	require.Equal(t, testbed.KubernetesVersion, version, "a version the options name wins over the environment")

	_, err = Options{KubernetesVersion: "v1.33.0"}.kubernetesVersion()
	require.ErrorContains(t, err, "not v1.33.0")
}
