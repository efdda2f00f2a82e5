package kube

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// TestListInventoryDRAWhileClaimsComeAndGo checks the inventory's DRA counts
// against what the real kube-scheduler allocates: ResourceSlices as NVIDIA's
// driver publishes them (one pool per node, named after it), claims and
// pods that the scheduler places, and the inventory read after each change
// must show exactly the devices the claims' allocations hold.
//
// Until the testbed has a DRA driver simulator, the test publishes the
// ResourceSlices itself. Its nodes are not kwok's (nothing else changes
// them); its pods tolerate every taint, as the node controller marks
// kubelet-less nodes unreachable.
func TestListInventoryDRAWhileClaimsComeAndGo(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	admin := cluster.Client()
	requireDRAServed(t, admin)

	const suite = "suite=inventory-dra"
	nodeLabels := func(name string) map[string]string {
		return map[string]string{"suite": "inventory-dra", testNodeLabel: name}
	}
	dpNode := plainGPUNode("invdra-dp", "NVIDIA-A100-SXM4-40GB", 4, 40960, nodeLabels("invdra-dp"))
	bothNode := plainGPUNode("invdra-both", "NVIDIA-A100-SXM4-40GB", 2, 40960, nodeLabels("invdra-both"))
	for _, n := range []*corev1.Node{dpNode, bothNode, draOnlyNode("invdra-gpu", nodeLabels("invdra-gpu")), draOnlyNode("invdra-mig", nodeLabels("invdra-mig"))} {
		createNodeForTest(t, admin, n)
	}
	h100 := func(i int) resourcev1.Device { return testGPUDevice(i, "NVIDIA H100 80GB HBM3", 80) }
	a100 := func(i int) resourcev1.Device { return testGPUDevice(i, "NVIDIA A100-SXM4-40GB", 40) }
	// invdra-gpu rewrote its pool: generation 1 (six GPUs) is stale, only
	// generation 2 (four GPUs) counts.
	createSlices(t, admin,
		inventoryTestSlice("invdra-gpu-old", "invdra-gpu", 1, h100(10), h100(11), h100(12), h100(13), h100(14), h100(15)),
		inventoryTestSlice("invdra-gpu", "invdra-gpu", 2, h100(0), h100(1), h100(2), h100(3)),
		inventoryTestSlice("invdra-mig", "invdra-mig", 1, h100(0),
			testMIGDevice(1, 19, 0, 1, "1g.10gb"), testMIGDevice(1, 19, 1, 1, "1g.10gb"), testMIGDevice(1, 9, 4, 4, "3g.40gb")),
		inventoryTestSlice("invdra-both", "invdra-both", 1, a100(0), a100(1)),
	)
	createDeviceClass(t, admin, "inventory-dra-gpu", "device.attributes['gpu.nvidia.com'].type == 'gpu'")
	createDeviceClass(t, admin, "inventory-dra-mig-1g", "device.attributes['gpu.nvidia.com'].type == 'mig' && device.attributes['gpu.nvidia.com'].profile == '1g.10gb'")

	ns := "inventory-dra"
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	// A device-plugin pod on the node that offers both: its GPU is one of
	// the node's two, whichever path handed it out.
	_, err = admin.CoreV1().Pods(ns).Create(ctx, boundGPUPod("dp-1", "invdra-both", 1), metav1.CreateOptions{})
	require.NoError(t, err)

	read := func() map[string]GPUNode {
		t.Helper()
		inv, err := clusterOf(admin).ListInventory(ctx, InventoryOptions{LabelSelector: suite, PageSize: 2})
		require.NoError(t, err)
		require.True(t, inv.DRAServed)
		byName := map[string]GPUNode{}
		for _, n := range inv.Nodes {
			byName[n.Name] = n
		}
		require.Len(t, byName, 4)
		// The inventory's allocations are the claims' allocations, node by node.
		require.Equal(t, claimedDevicesByNode(t, admin), draAllocatedByNode(byName))
		return byName
	}

	// No claims: everything published is free.
	nodes := read()
	require.Equal(t, GPUPathDevicePlugin, nodes["invdra-dp"].GPUPath)
	require.Equal(t, GPUPathDRA, nodes["invdra-gpu"].GPUPath)
	require.Equal(t, GPUPathDRA, nodes["invdra-mig"].GPUPath)
	require.Equal(t, GPUPathBoth, nodes["invdra-both"].GPUPath)
	require.Equal(t, DeviceCounts{Published: 4, Free: 4}, nodes["invdra-gpu"].DRA, "the stale generation's six devices do not count")
	require.Equal(t, int64(4), nodes["invdra-gpu"].Count)
	require.Equal(t, "NVIDIA-H100-80GB-HBM3", nodes["invdra-gpu"].Product, "GFD's spelling of the driver's productName")
	require.Equal(t, int64(80*1024), nodes["invdra-gpu"].MemoryMiB)
	require.Equal(t, "9.0", nodes["invdra-gpu"].ComputeCapability)
	require.Equal(t, map[string]DeviceCounts{"1g.10gb": {Published: 2, Free: 2}, "3g.40gb": {Published: 1, Free: 1}}, nodes["invdra-mig"].MIG)
	require.Equal(t, int64(1), nodes["invdra-mig"].Count, "the MIG devices are not whole GPUs")
	require.Equal(t, int64(2), nodes["invdra-both"].Count, "two GPUs offered by both paths are two GPUs")
	require.Equal(t, int64(1), nodes["invdra-both"].Allocated, "the device-plugin pod's GPU")

	// Claims come: the scheduler allocates two H100s, one 1g.10gb MIG
	// device and one A100 on the node that offers both.
	for _, c := range []struct{ name, node, class string }{
		{"two-h100", "invdra-gpu", "inventory-dra-gpu"},
		{"one-mig", "invdra-mig", "inventory-dra-mig-1g"},
		{"one-a100", "invdra-both", "inventory-dra-gpu"},
	} {
		count := int64(1)
		if c.name == "two-h100" {
			count = 2
		}
		createClaimAndPod(t, admin, ns, c.name, c.node, c.class, count)
	}
	awaitClaims(t, admin, ns, func(claims []resourcev1.ResourceClaim) bool {
		for _, c := range claims {
			if c.Status.Allocation == nil {
				return false
			}
		}
		return len(claims) == 3
	})
	nodes = read()
	require.Equal(t, DeviceCounts{Published: 4, Allocated: 2, Free: 2}, nodes["invdra-gpu"].DRA)
	require.Equal(t, int64(2), nodes["invdra-gpu"].Free)
	require.Equal(t, DeviceCounts{Published: 2, Allocated: 1, Free: 1}, nodes["invdra-mig"].MIG["1g.10gb"])
	require.Equal(t, int64(1), nodes["invdra-mig"].Free, "a MIG device takes no whole GPU")
	require.Equal(t, int64(2), nodes["invdra-both"].Allocated, "one GPU through each path")
	require.Equal(t, int64(0), nodes["invdra-both"].Free)

	// Claims go: the two H100s and the MIG device are free again.
	deleteClaimAndPod(t, admin, ns, "two-h100")
	deleteClaimAndPod(t, admin, ns, "one-mig")
	awaitClaims(t, admin, ns, func(claims []resourcev1.ResourceClaim) bool { return len(claims) == 1 })
	nodes = read()
	require.Equal(t, DeviceCounts{Published: 4, Free: 4}, nodes["invdra-gpu"].DRA)
	require.Equal(t, DeviceCounts{Published: 2, Free: 2}, nodes["invdra-mig"].MIG["1g.10gb"])
	require.Equal(t, int64(2), nodes["invdra-both"].Allocated)
}

// TestListInventoryDRARequests checks the cost of the DRA half: one paginated
// LIST of the driver's ResourceSlices (the server filters by driver) and one
// of ResourceClaims, beside the node and pod lists, never a call per node.
func TestListInventoryDRARequests(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	admin := cluster.Client()
	requireDRAServed(t, admin)

	labels := map[string]string{"suite": "inventory-dra-requests"}
	for i := range 3 {
		name := fmt.Sprintf("invdra-req-%d", i)
		createNodeForTest(t, admin, draOnlyNode(name, labels))
		createSlices(t, admin, inventoryTestSlice(name, name, 1, testGPUDevice(0, "NVIDIA L4", 22)))
	}
	// A slice of another driver, which the field selector leaves out.
	other := inventoryTestSlice("invdra-req-other", "invdra-req-0", 1, testGPUDevice(0, "NVIDIA L4", 22))
	other.Spec.Driver = "other.example.com"
	createSlices(t, admin, other)

	client, requests := countingClientByResource(t)
	inv, err := clusterOf(client).ListInventory(ctx, InventoryOptions{PageSize: 2, LabelSelector: "suite=inventory-dra-requests"})
	require.NoError(t, err)
	require.Len(t, inv.Nodes, 3)
	for _, n := range inv.Nodes {
		require.Equal(t, DeviceCounts{Published: 1, Free: 1}, n.DRA, n.Name)
	}
	require.Equal(t, inventoryListPages(t, admin, "suite=inventory-dra-requests", true), requests.byResource(),
		"one paginated LIST per kind, in pages of 2")
}

// inventoryListPages is how many pages of 2 each LIST of ListInventory
// takes on the cluster as it is: nodes (labelSelector), pods, the DRA
// driver's ResourceSlices and, withClaims, ResourceClaims; keyed by
// resource as resourceRequests counts them.
func inventoryListPages(t *testing.T, client kubernetes.Interface, labelSelector string, withClaims bool) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	pages := map[string]int64{
		"nodes": listPagesOf(t, func(o metav1.ListOptions) (string, error) {
			o.LabelSelector = labelSelector
			l, err := client.CoreV1().Nodes().List(ctx, o)
			return l.Continue, err
		}),
		"pods": listPagesOf(t, func(o metav1.ListOptions) (string, error) {
			o.FieldSelector = nonTerminatedBoundPods
			l, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
			return l.Continue, err
		}),
		"resourceslices": listPagesOf(t, func(o metav1.ListOptions) (string, error) {
			o.FieldSelector = "spec.driver=" + nvdra.DriverName
			l, err := client.ResourceV1().ResourceSlices().List(ctx, o)
			return l.Continue, err
		}),
	}
	if withClaims {
		pages["resourceclaims"] = listPagesOf(t, func(o metav1.ListOptions) (string, error) {
			l, err := client.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(ctx, o)
			return l.Continue, err
		})
	}
	return pages
}

// listPagesOf counts the pages of 2 a paginated LIST takes. With a field
// selector the server fills a page from more objects than it returns, so
// the count is the server's, not len/2.
func listPagesOf(t *testing.T, list func(metav1.ListOptions) (string, error)) int64 {
	t.Helper()
	var pages int64
	o := metav1.ListOptions{Limit: 2}
	for {
		next, err := list(o)
		require.NoError(t, err)
		pages++
		if next == "" {
			return pages
		}
		o.Continue = next
	}
}

// resourceRequests counts a client's requests by the resource of their path
// (the last path segment of a LIST: "nodes", "resourceslices").
type resourceRequests struct {
	mu sync.Mutex
	n  map[string]int64
}

func (r *resourceRequests) byResource() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.n)
}

// countingClientByResource is a protobuf clientset, as the provider builds
// it, that counts its requests by resource.
func countingClientByResource(t *testing.T) (kubernetes.Interface, *resourceRequests) {
	t.Helper()
	requests := &resourceRequests{n: map[string]int64{}}
	cfg := rest.CopyConfig(cluster.RESTConfig())
	cfg.QPS, cfg.Burst = -1, 0
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			requests.mu.Lock()
			requests.n[path.Base(r.URL.Path)]++
			requests.mu.Unlock()
			return rt.RoundTrip(r)
		})
	}
	c, err := Connect(cfg, ClusterOptions{})
	require.NoError(t, err)
	return c.client, requests
}

// testNodeLabel pins a test's pod to one of its nodes through the scheduler
// (a nodeName would bypass it, and no claim would be allocated).
const testNodeLabel = "inventory-dra/node"

// draOnlyNode is a node that offers its GPUs only through DRA: no
// nvidia.com/gpu capacity and no GFD labels.
func draOnlyNode(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
		},
	}
}

// testSlice is a ResourceSlice as NVIDIA's gpu-kubelet-plugin publishes one:
// driver gpu.nvidia.com, one pool named after the node, one slice per pool
// generation.
func inventoryTestSlice(name, node string, generation int64, devices ...resourcev1.Device) *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   nvdra.DriverName,
			NodeName: ptr.To(node),
			Pool:     resourcev1.ResourcePool{Name: node, Generation: generation, ResourceSliceCount: 1},
			Devices:  devices,
		},
	}
}

// testGPUDevice is a whole GPU with the attributes the driver publishes
// (cmd/gpu-kubelet-plugin/deviceinfo.go, GpuInfo.GetDevice).
func testGPUDevice(i int, product string, memoryGiB int64) resourcev1.Device {
	return resourcev1.Device{
		Name: fmt.Sprintf("gpu-%d", i),
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			nvdra.AttrType:                  {StringValue: ptr.To(nvdra.DeviceTypeGPU)},
			nvdra.AttrUUID:                  {StringValue: ptr.To(testGPUUUID(i))},
			nvdra.AttrPCIeBusID:             {StringValue: ptr.To(testGPUPCIBusID(i))},
			nvdra.AttrProductName:           {StringValue: ptr.To(product)},
			nvdra.AttrCUDAComputeCapability: {VersionValue: ptr.To("9.0.0")},
			nvdra.AttrDriverVersion:         {VersionValue: ptr.To("580.95.5")},
			nvdra.AttrCUDADriverVersion:     {VersionValue: ptr.To("13.0.0")},
		},
		Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
			nvdra.CapacityMemory: {Value: *resource.NewQuantity(memoryGiB<<30, resource.BinarySI)},
		},
	}
}

// testGPUUUID and testGPUPCIBusID are the UUID and PCI bus ID of
// testGPUDevice i, as the driver spells them.
func testGPUUUID(i int) string { return fmt.Sprintf("GPU-%08d", i) }

func testGPUPCIBusID(i int) string { return fmt.Sprintf("0000:%02x:00.0", 0x1a+i) }

// testMIGDevice is a MIG device of GPU parent (MigDeviceInfo.GetDevice),
// named as the driver names it: parent, MIG profile ID, placement start and
// size.
func testMIGDevice(parent, profileID, start, size int, profile string) resourcev1.Device {
	return resourcev1.Device{
		Name: fmt.Sprintf("gpu-%d-mig-%d-%d-%d", parent, profileID, start, size),
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			nvdra.AttrType:        {StringValue: ptr.To(nvdra.DeviceTypeMIG)},
			nvdra.AttrProfile:     {StringValue: ptr.To(profile)},
			nvdra.AttrProductName: {StringValue: ptr.To("NVIDIA H100 80GB HBM3")},
		},
		Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
			nvdra.CapacityMemory: {Value: resource.MustParse("10Gi")},
		},
	}
}

func requireDRAServed(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	_, err := client.Discovery().ServerResourcesForGroupVersion(resourcev1.SchemeGroupVersion.String())
	require.NoError(t, err, "the testbed's Kubernetes serves resource.k8s.io/v1")
}

// createNodeForTest creates the node until the test ends.
func createNodeForTest(t *testing.T, client kubernetes.Interface, node *corev1.Node) {
	t.Helper()
	require.NoError(t, createNode(context.Background(), client, node))
	t.Cleanup(func() {
		require.NoError(t, client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}))
	})
}

// createSlices publishes the slices until the test ends: other tests of the
// package share the API server, and some look at every node's devices.
func createSlices(t *testing.T, client kubernetes.Interface, slices ...*resourcev1.ResourceSlice) {
	t.Helper()
	for _, s := range slices {
		_, err := client.ResourceV1().ResourceSlices().Create(context.Background(), s, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			require.NoError(t, client.ResourceV1().ResourceSlices().Delete(context.Background(), s.Name, metav1.DeleteOptions{}))
		})
	}
}

func createDeviceClass(t *testing.T, client kubernetes.Interface, name, cel string) {
	t.Helper()
	_, err := client.ResourceV1().DeviceClasses().Create(context.Background(), &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: "device.driver == '" + nvdra.DriverName + "' && " + cel,
		}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, client.ResourceV1().DeviceClasses().Delete(context.Background(), name, metav1.DeleteOptions{}))
	})
}

// createClaimAndPod creates a claim for count devices of class and a pod
// that uses it, which the scheduler may place only on node.
func createClaimAndPod(t *testing.T, client kubernetes.Interface, ns, name, node, class string, count int64) {
	t.Helper()
	ctx := context.Background()
	_, err := client.ResourceV1().ResourceClaims(ns).Create(ctx, &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name:    "gpus",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count},
		}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeSelector:   map[string]string{testNodeLabel: node},
			Tolerations:    []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To(name)}},
			Containers: []corev1.Container{{
				Name:      "cuda",
				Image:     "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpus"}}},
			}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// deleteClaimAndPod deletes the pod at once (no kubelet will confirm it) and
// its claim, which goes once the claim controller has seen the pod go.
func deleteClaimAndPod(t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	err := client.ResourceV1().ResourceClaims(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
}

// awaitClaims watches the namespace's claims until done holds for them.
func awaitClaims(t *testing.T, client kubernetes.Interface, ns string, done func([]resourcev1.ResourceClaim) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	claims := client.ResourceV1().ResourceClaims(ns)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return claims.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return claims.Watch(ctx, o)
		},
	}
	seen := map[string]resourcev1.ResourceClaim{}
	check := func() bool {
		list := make([]resourcev1.ResourceClaim, 0, len(seen))
		for _, c := range seen {
			list = append(list, c)
		}
		return done(list)
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &resourcev1.ResourceClaim{}, func(store cache.Store) (bool, error) {
		for _, o := range store.List() {
			c, ok := o.(*resourcev1.ResourceClaim)
			if !ok {
				return false, fmt.Errorf("watching ResourceClaims: got a %T", o)
			}
			seen[c.Name] = *c
		}
		return check(), nil
	}, func(ev watch.Event) (bool, error) {
		c, ok := ev.Object.(*resourcev1.ResourceClaim)
		if !ok {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			delete(seen, c.Name)
		} else {
			seen[c.Name] = *c
		}
		return check(), nil
	})
	require.NoError(t, err, "waiting for the claims of %s; last seen: %+v", ns, seen)
}

// claimedDevicesByNode counts, per node (the driver's pool), the devices of
// NVIDIA's driver that the cluster's claims' allocations hold.
func claimedDevicesByNode(t *testing.T, client kubernetes.Interface) map[string]int64 {
	t.Helper()
	claims, err := client.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]int64{}
	for _, c := range claims.Items {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver == nvdra.DriverName && strings.HasPrefix(r.Pool, "invdra-") {
				out[r.Pool]++
			}
		}
	}
	return out
}

// draAllocatedByNode is the inventory's DRA allocations per node.
func draAllocatedByNode(nodes map[string]GPUNode) map[string]int64 {
	out := map[string]int64{}
	for name, n := range nodes {
		if n.DRA.Allocated > 0 {
			out[name] = n.DRA.Allocated
		}
	}
	return out
}
