package kube

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// draTestNodes registers kwok nodes labeled dra-test=label and as NFD
// labels a node with an NVIDIA PCI device, deleted when the test ends.
// Their instance type has no GPU, so the testbed's DRA simulator
// publishes nothing for them (as the real plugin publishes nothing where
// it sees no GPU): what they publish is what the test publishes.
func draTestNodes(t *testing.T, label string, names ...string) {
	t.Helper()
	ctx := context.Background()
	m5, ok := ec2catalog.Lookup("m5.xlarge")
	require.True(t, ok)
	for _, name := range names {
		require.NoError(t, cluster.AddNode(ctx, k8s.NodeSpec{Name: name, InstanceType: m5,
			ExtraLabels: map[string]string{"dra-test": label, gpulabels.NFDPCIPresent: "true"}}))
		t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), name)) })
	}
	require.NoError(t, cluster.WaitForNodesReady(ctx, names...))
}

// publishTestSlice publishes, as the kubelet plugin would, one slice of
// node's pool with devices GPUs; the test deletes it at the end.
func publishTestSlice(t *testing.T, node string, index, count int64, devices int) {
	t.Helper()
	s := testSlice(fmt.Sprintf("%s-gpu.nvidia.com-%d", node, index), node, 1, count, devices)
	for i := range s.Spec.Devices {
		s.Spec.Devices[i].Name = fmt.Sprintf("gpu-%d-%d", index, i)
	}
	slices := cluster.Client().ResourceV1().ResourceSlices()
	_, err := slices.Create(context.Background(), s, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := slices.Delete(context.Background(), s.Name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
			require.NoError(t, err)
		}
	})
}

func TestDRADriverLifecycle(t *testing.T) {
	requireCluster(t)
	draTestNodes(t, "lifecycle", "dra-life-0", "dra-life-1")
	draTestNodes(t, "elsewhere", "dra-life-other")
	c := clusterOf(cluster.Client())
	ctx := context.Background()
	spec := testDRADriverSpec()
	spec.Namespace = "dra-lifecycle"
	spec.NodeSelector = map[string]string{"dra-test": "lifecycle"}
	spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	spec.FeatureGates = map[string]bool{"TimeSlicingSettings": true}
	owner, err := NewOwnership()
	require.NoError(t, err)

	require.NoError(t, c.DRADriverAbsent(ctx, spec))
	created, warnings, err := c.CreateDRADriver(ctx, spec, owner)
	require.NoError(t, err)
	require.Empty(t, warnings)
	require.True(t, created.Exists)
	require.True(t, created.NamespaceCreated)
	t.Cleanup(func() {
		_, _ = c.DeleteDRADriver(context.Background(), spec, owner, NamespaceDeletion{Created: true, EvenIfNotEmpty: true})
	})
	require.Error(t, c.DRADriverAbsent(ctx, spec), "the DaemonSet exists now")
	require.NoError(t, c.WaitForDaemonSetRollout(ctx, spec.Namespace, spec.DaemonSetName()))

	// No node has published: the wait names both, and why.
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = c.WaitForResourceSlices(short, spec)
	cancel()
	require.True(t, IsNotReady(err), "%v", err)
	require.Contains(t, err.Error(), "2 of 2 nodes running the kubelet plugin have not published")
	require.Contains(t, err.Error(), "dra-life-0: no ResourceSlice of driver gpu.nvidia.com is published for it; its kubelet plugin pod")
	require.Contains(t, err.Error(), "is Running and ready")
	require.NotContains(t, err.Error(), "dra-life-other")

	// One node complete, the other half-way through a two-slice pool.
	publishTestSlice(t, "dra-life-0", 0, 1, 1)
	publishTestSlice(t, "dra-life-1", 0, 2, 4)
	short, cancel = context.WithTimeout(ctx, 5*time.Second)
	err = c.WaitForResourceSlices(short, spec)
	cancel()
	require.True(t, IsNotReady(err), "%v", err)
	require.Contains(t, err.Error(), "1 of 2 nodes")
	require.Contains(t, err.Error(), "dra-life-1: 1 of the 2 ResourceSlices of its pool's newest generation are published")

	// The wait started before the last slice ends when it comes.
	done := make(chan error, 1)
	waitCtx, cancelWait := context.WithTimeout(ctx, time.Minute)
	defer cancelWait()
	go func() { done <- c.WaitForResourceSlices(waitCtx, spec) }()
	publishTestSlice(t, "dra-life-1", 1, 2, 4)
	require.NoError(t, <-done)

	live, found, err := c.ReadDRADriver(ctx, spec.Namespace, spec.Name, owner)
	require.NoError(t, err)
	require.True(t, found)
	want := spec
	want.Owner = owner.ID
	require.Equal(t, want, live.Spec, "read back as deployed")
	require.Equal(t, DRADriverStatus{DesiredNodes: 2, ReadyNodes: 2, PublishedNodes: 2, Devices: 9}, live.Status)

	// Update: the MIG class dropped, the extended resource mapped. Where
	// the DRAExtendedResource gate is off (Kubernetes 1.34 and 1.35: the
	// oldest testbed), the API server drops the field, and the update
	// says so.
	spec.DeviceClasses = []string{nvdra.DeviceClassGPU}
	spec.ExtendedResourceName = "nvidia.com/gpu"
	warnings, err = c.UpdateDRADriver(ctx, spec, owner)
	require.Empty(t, warnings)
	version, verr := testbed.ChosenKubernetesVersion()
	require.NoError(t, verr)
	extendedOn := version != testbed.OldestKubernetesVersion // v1.37 vs v1.34
	if extendedOn {
		require.NoError(t, err)
	} else {
		require.ErrorIs(t, err, ErrExtendedResourceDropped)
		require.ErrorContains(t, err, "the cluster runs Kubernetes "+version)
		spec.ExtendedResourceName = ""
		_, err = c.UpdateDRADriver(ctx, spec, owner)
		require.NoError(t, err, "without the extended resource the update goes through")
	}
	_, err = cluster.Client().ResourceV1().DeviceClasses().Get(ctx, nvdra.DeviceClassMIG, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the MIG class is gone: %v", err)
	live, _, err = c.ReadDRADriver(ctx, spec.Namespace, spec.Name, owner)
	require.NoError(t, err)
	if extendedOn {
		require.Equal(t, []string{nvdra.DeviceClassGPU}, live.Spec.DeviceClasses)
		require.Equal(t, "nvidia.com/gpu", live.Spec.ExtendedResourceName)
	} else {
		require.Empty(t, live.Spec.ExtendedResourceName)
	}

	// Another create of the same cluster-wide classes stops at them.
	other := spec
	other.Namespace = "dra-lifecycle-other"
	require.ErrorContains(t, c.DRADriverAbsent(ctx, other), "DeviceClass")

	deleted, err := c.DeleteDRADriver(ctx, spec, owner, NamespaceDeletion{Created: true})
	require.NoError(t, err)
	require.Empty(t, deleted.Left)
	require.Nil(t, deleted.NamespaceKept)
	_, found, err = c.ReadDRADriver(ctx, spec.Namespace, spec.Name, owner)
	require.NoError(t, err)
	require.False(t, found)
	for _, class := range DRADeviceClasses {
		_, err := cluster.Client().ResourceV1().DeviceClasses().Get(ctx, class, metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "DeviceClass %s: %v", class, err)
	}
	_, err = cluster.Client().RbacV1().ClusterRoles().Get(ctx, spec.ClusterRoleName(), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = cluster.Client().CoreV1().Namespaces().Get(ctx, spec.Namespace, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
}
