package provider

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// TestAccInventoryDataSource_draClaimsComeAndGo reads gpu_inventory while
// ResourceClaims come and go, and checks that its DRA counts are the real
// kube-scheduler's allocations at each step: a DRA node (a kwok node without
// nvidia.com/gpu, publishing four H100s and two MIG devices as NVIDIA's
// driver would) beside a device-plugin node.
//
// The test publishes the ResourceSlice itself, as the DRA simulator would,
// so that the node has exactly the devices the counts assume.
func TestAccInventoryDataSource_draClaimsComeAndGo(t *testing.T) {
	testAccPreCheck(t)
	ctx := context.Background()
	client := cluster.Client()
	label := map[string]string{"gpu-test": "inventory-dra"}
	for _, spec := range []k8s.NodeSpec{
		{Name: "inv-dra-dp", InstanceType: instanceType(t, "g5.xlarge"), GFDLabeled: true, ExtraLabels: label},
		{Name: "inv-dra-h100", InstanceType: instanceType(t, "p5.48xlarge"), WithoutGPUCapacity: true, ExtraLabels: label},
	} {
		require.NoError(t, cluster.AddNode(ctx, spec))
		t.Cleanup(func() { require.NoError(t, cluster.DeleteNode(context.Background(), spec.Name)) })
	}
	require.NoError(t, cluster.WaitForNodesReady(ctx, "inv-dra-dp", "inv-dra-h100"))
	publishH100Slice(t, "inv-dra-h100")
	class := "inventory-acc-gpu"
	_, err := client.ResourceV1().DeviceClasses().Create(ctx, &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: class},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf("device.driver == %q && device.attributes[%q].%s == %q", nvdra.DriverName, nvdra.DriverName, nvdra.AttrType, nvdra.DeviceTypeGPU),
		}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = client.ResourceV1().DeviceClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	ns := "inventory-dra-acc"
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)

	config := providerConfig() + `
data "gpu_inventory" "dra" {
  source = "kubernetes"
  filter {
    label_selector = "gpu-test=inventory-dra"
  }
}
`
	const ds = "data.gpu_inventory.dra"
	counts := func(published, allocated int64) knownvalue.Check {
		return knownvalue.ObjectExact(map[string]knownvalue.Check{
			"published": knownvalue.Int64Exact(published), "allocated": knownvalue.Int64Exact(allocated),
			"unhealthy": knownvalue.Int64Exact(0), "free": knownvalue.Int64Exact(published - allocated),
		})
	}
	// h100 checks the DRA node against the H100s the claims hold, which
	// the scheduler chose (claimedOn reads them from the claims).
	h100 := func(allocated int64) []statecheck.StateCheck {
		node := tfjsonpath.New("nodes").AtMapKey("inv-dra-h100")
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue(ds, tfjsonpath.New("dra_served"), knownvalue.Bool(true)),
			statecheck.ExpectKnownValue(ds, node.AtMapKey("gpu_path"), knownvalue.StringExact("dra")),
			statecheck.ExpectKnownValue(ds, node.AtMapKey("product"), knownvalue.StringExact("NVIDIA-H100-80GB-HBM3")),
			statecheck.ExpectKnownValue(ds, node.AtMapKey("gpu_count"), knownvalue.Int64Exact(4)),
			statecheck.ExpectKnownValue(ds, node.AtMapKey("allocated"), knownvalue.Int64Exact(allocated)),
			statecheck.ExpectKnownValue(ds, node.AtMapKey("free"), knownvalue.Int64Exact(4-allocated)),
			statecheck.ExpectKnownValue(ds, node.AtMapKey("dra_devices"), counts(6, allocated)),
			statecheck.ExpectKnownValue(ds, node.AtMapKey("mig_devices"), knownvalue.MapExact(map[string]knownvalue.Check{"1g.10gb": counts(2, 0)})),
			statecheck.ExpectKnownValue(ds, tfjsonpath.New("nodes").AtMapKey("inv-dra-dp").AtMapKey("gpu_path"), knownvalue.StringExact("device_plugin")),
			statecheck.ExpectKnownValue(ds, tfjsonpath.New("totals"), knownvalue.ObjectPartial(map[string]knownvalue.Check{
				"nodes": knownvalue.Int64Exact(2), "gpus": knownvalue.Int64Exact(5), "allocated": knownvalue.Int64Exact(allocated),
				"device_plugin_nodes": knownvalue.Int64Exact(1), "dra_nodes": knownvalue.Int64Exact(1),
			})),
			statecheck.ExpectKnownValue(ds, tfjsonpath.New("by_product").AtMapKey("NVIDIA-H100-80GB-HBM3").AtMapKey("dra_devices"), counts(6, allocated)),
			claimedOn("inv-dra-h100", allocated),
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, ConfigStateChecks: h100(0)},
			// Claims come: 2 + 1 H100s, placed by the scheduler.
			{
				PreConfig: func() {
					claimGPUs(t, ns, "two", "inv-dra-h100", class, 2)
					claimGPUs(t, ns, "one", "inv-dra-h100", class, 1)
					awaitClaimCount(t, ns, 2, true)
				},
				Config:            config,
				ConfigStateChecks: h100(3),
			},
			// One goes: its two H100s are free again.
			{
				PreConfig: func() {
					require.NoError(t, client.CoreV1().Pods(ns).Delete(ctx, "two", metav1.DeleteOptions{}))
					require.NoError(t, client.ResourceV1().ResourceClaims(ns).Delete(ctx, "two", metav1.DeleteOptions{}))
					awaitClaimCount(t, ns, 1, true)
				},
				Config:            config,
				ConfigStateChecks: h100(1),
			},
		},
	})
}

// publishH100Slice publishes the ResourceSlice NVIDIA's driver would for a
// node with four whole H100s and one H100 split into two 1g.10gb MIG devices.
func publishH100Slice(t *testing.T, node string) {
	client := cluster.Client()
	t.Helper()
	device := func(name, typ, profile, memory string) resourcev1.Device {
		attrs := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			nvdra.AttrType:                  {StringValue: ptr.To(typ)},
			nvdra.AttrProductName:           {StringValue: ptr.To("NVIDIA H100 80GB HBM3")},
			nvdra.AttrCUDAComputeCapability: {VersionValue: ptr.To("9.0.0")},
		}
		if profile != "" {
			attrs[nvdra.AttrProfile] = resourcev1.DeviceAttribute{StringValue: ptr.To(profile)}
		}
		return resourcev1.Device{Name: name, Attributes: attrs, Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
			nvdra.CapacityMemory: {Value: apiresource.MustParse(memory)},
		}}
	}
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   nvdra.DriverName,
			NodeName: ptr.To(node),
			Pool:     resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{
				device("gpu-0", nvdra.DeviceTypeGPU, "", "80Gi"), device("gpu-1", nvdra.DeviceTypeGPU, "", "80Gi"),
				device("gpu-2", nvdra.DeviceTypeGPU, "", "80Gi"), device("gpu-3", nvdra.DeviceTypeGPU, "", "80Gi"),
				device("gpu-4-mig-19-0-1", nvdra.DeviceTypeMIG, "1g.10gb", "10Gi"), device("gpu-4-mig-19-1-1", nvdra.DeviceTypeMIG, "1g.10gb", "10Gi"),
			},
		},
	}
	_, err := client.ResourceV1().ResourceSlices().Create(context.Background(), slice, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = client.ResourceV1().ResourceSlices().Delete(context.Background(), node, metav1.DeleteOptions{})
	})
}

// claimGPUs creates a claim for count devices of class and a pod using it
// that the scheduler may place only on node.
func claimGPUs(t *testing.T, ns, name, node, class string, count int64) {
	client := cluster.Client()
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
			NodeSelector:   map[string]string{corev1.LabelHostname: node},
			Tolerations:    []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To(name)}},
			Containers: []corev1.Container{{
				Name: "cuda", Image: "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpus"}}},
			}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// awaitClaimCount waits, with a watch, until the namespace holds n claims,
// all allocated.
func awaitClaimCount(t *testing.T, ns string, n int, allocated bool) {
	client := cluster.Client()
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var last []resourcev1.ResourceClaim
	err := wait.PollUntilContextCancel(ctx, 0, true, func(ctx context.Context) (bool, error) {
		w, err := client.ResourceV1().ResourceClaims(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		defer w.Stop()
		list, err := client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for {
			last = list.Items
			done := len(last) == n
			for _, c := range last {
				done = done && (!allocated || c.Status.Allocation != nil)
			}
			if done {
				return true, nil
			}
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case _, ok := <-w.ResultChan():
				if !ok {
					return false, nil
				}
			}
			if list, err = client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{}); err != nil {
				return false, nil
			}
		}
	})
	require.NoError(t, err, "waiting for %d allocated claims in %s; last seen %d", n, ns, len(last))
}

// claimedOn checks, when the state check runs, that the claims' allocations
// hold exactly want devices of node's pool: the inventory's figures above are
// then the scheduler's.
func claimedOn(node string, want int64) statecheck.StateCheck {
	return claimCheck{pool: node, want: want}
}

type claimCheck struct {
	pool string
	want int64
}

func (c claimCheck) CheckState(ctx context.Context, _ statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	claims, err := cluster.Client().ResourceV1().ResourceClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		resp.Error = err
		return
	}
	var got int64
	for _, cl := range claims.Items {
		if cl.Status.Allocation == nil {
			continue
		}
		for _, r := range cl.Status.Allocation.Devices.Results {
			if r.Driver == nvdra.DriverName && r.Pool == c.pool {
				got++
			}
		}
	}
	if got != c.want {
		resp.Error = fmt.Errorf("the claims hold %d devices of pool %s, the inventory was checked against %d", got, c.pool, c.want)
	}
}
