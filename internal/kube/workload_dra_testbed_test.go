package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// Until the testbed's DRA simulator publishes devices for DRA nodes, these
// tests publish them: a ResourceSlice per node as NVIDIA's gpu-kubelet-plugin
// writes one, and the chart's DeviceClasses. The real kube-scheduler
// allocates from them; kwok runs the pods (nothing prepares the devices).

// draNode registers a kwok node without nvidia.com/gpu (no device plugin
// runs there) whose devices are published in a ResourceSlice.
func draNode(t *testing.T, name string, labels map[string]string, devices ...resourcev1.Device) {
	t.Helper()
	ctx := context.Background()
	client := cluster.Client()
	for _, c := range []*resourcev1.DeviceClass{testDeviceClass(nvdra.DeviceClassGPU, nvdra.DeviceTypeGPU), testDeviceClass(nvdra.DeviceClassMIG, nvdra.DeviceTypeMIG)} {
		if _, err := client.ResourceV1().DeviceClasses().Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	p4d, ok := ec2catalog.Lookup("p4d.24xlarge")
	require.True(t, ok)
	require.NoError(t, cluster.AddNode(ctx, k8s.NodeSpec{Name: name, InstanceType: p4d, WithoutGPUCapacity: true, ExtraLabels: labels}))
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + nvdra.DriverName},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   nvdra.DriverName,
			Pool:     resourcev1.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(name),
			Devices:  devices,
		},
	}
	_, err := client.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = client.ResourceV1().ResourceSlices().Delete(context.Background(), slice.Name, metav1.DeleteOptions{})
		_ = cluster.DeleteNode(context.Background(), name)
	})
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	require.NoError(t, cluster.WaitForNodesReady(waitCtx, name))
}

// draJob is a one-completion DRA Job in a namespace of its own, restricted
// to the nodes labeled with the test's label.
func draJob(t *testing.T, name string, gpu WorkloadGPU) WorkloadSpec {
	t.Helper()
	createNamespace(t, name)
	t.Cleanup(func() {
		_ = cluster.Client().CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	spec := testJobSpec(0)
	spec.Namespace, spec.Name = name, name
	spec.Pod.GPU = gpu
	spec.Pod.NodeSelector = map[string]string{"dra-test": name}
	return spec
}

func TestDRAJobWhoseFirstChoiceNoNodeHasRunsOnItsSecond(t *testing.T) {
	requireCluster(t)
	const name = "dra-second-choice"
	labels := map[string]string{"dra-test": name}
	draNode(t, name+"-a100-40", labels, testGPU("gpu-0", "NVIDIA A100-SXM4-40GB", "40Gi", "8.0.0", "12.4.0"))
	draNode(t, name+"-a100-80", labels,
		testGPU("gpu-0", "NVIDIA A100-SXM4-80GB", "80Gi", "8.0.0", "12.4.0"),
		testGPU("gpu-1", "NVIDIA A100-SXM4-80GB", "80Gi", "8.0.0", "12.4.0"))
	spec := draJob(t, name, h100ElseTwoA100())
	c, err := Connect(cluster.RESTConfig(), ClusterOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	placement, err := c.PlaceDRA(ctx, spec.Pod.GPU)
	require.NoError(t, err)
	require.Empty(t, placement.Choices[0].Nodes, "no node has an H100")
	require.Contains(t, placement.Choices[1].Nodes, name+"-a100-80")

	owner, err := NewOwnership()
	require.NoError(t, err)
	created, err := c.CreateWorkload(ctx, spec, owner)
	require.NoError(t, err)
	require.True(t, created)
	status, err := c.WaitForWorkload(ctx, spec)
	require.NoError(t, err)
	require.Equal(t, PhaseComplete, status.Phase)
	require.Equal(t, []string{name + "-a100-80"}, status.NodeNames,
		"it ran where the second choice, two A100 80GB, is (the claim made for the pod is deleted with it once it is done)")

	live, found, err := c.ReadWorkload(ctx, spec.Ref())
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, spec.Pod.GPU, live.Spec.Pod.GPU, "the criteria read back from the claim template")

	require.NoError(t, c.DeleteWorkload(ctx, spec.Ref(), owner))
	_, err = c.client.ResourceV1().ResourceClaimTemplates(name).Get(ctx, name, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the template goes with the workload: %v", err)
}

func TestImpossibleDRARequestFailsWithANodeByNodeReason(t *testing.T) {
	requireCluster(t)
	const name = "dra-impossible"
	labels := map[string]string{"dra-test": name}
	draNode(t, name+"-a100-40", labels, testGPU("gpu-0", "NVIDIA A100-SXM4-40GB", "40Gi", "8.0.0", "12.4.0"))
	spec := draJob(t, name, WorkloadGPU{Allocation: AllocateDRA, Count: 1, MinMemoryGiB: 79})
	c, err := Connect(cluster.RESTConfig(), ClusterOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	owner, err := NewOwnership()
	require.NoError(t, err)
	_, err = c.CreateWorkload(ctx, spec, owner)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.DeleteWorkload(context.Background(), spec.Ref(), owner) })

	_, err = c.WaitForWorkload(ctx, spec)
	var unschedulable *UnschedulableError
	require.True(t, errors.As(err, &unschedulable), "%v", err)
	require.NoError(t, ctx.Err(), "it failed before the wait's time was up")
	require.Contains(t, err.Error(), name+"-a100-40: choice 1 (1 GPU with ≥ 79 GiB): 0 of 1 devices match, failing "+
		"device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('79Gi')) >= 0 (met by 0 of 1 devices)")
}
