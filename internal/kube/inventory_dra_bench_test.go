package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// benchDRAClaims is how many one-GPU ResourceClaims hold devices of the DRA
// half of the bench fleet.
const benchDRAClaims = 1000

// BenchmarkListInventoryDRA reads the bench fleet's inventory as the
// provider does (protobuf, pages of 1,000): as createBenchFleet makes it
// (5,000 device-plugin nodes, 2,000 GPU pods: the device-plugin-only
// baseline), after half its nodes (every odd one: the A100 and T4 nodes)
// have moved to DRA (no nvidia.com/gpu capacity, one ResourceSlice each
// with the node's GPUs as NVIDIA's driver publishes them, benchDRAClaims
// allocated one-GPU claims), and after they have moved back: the baseline
// on both sides of the DRA read, as a busy API server's pace drifts (the
// node controller still marks a fresh fleet's kubelet-less nodes). bench/
// inventory.sh turns them into a ratio.
func BenchmarkListInventoryDRA(b *testing.B) {
	requireCluster(b)
	createBenchFleet(b)
	client, requests := countingClient(b, true)
	read := func(b *testing.B) { benchmarkInventoryReads(b, client, requests, DefaultPageSize) }
	b.Run("fleet=device-plugin-only", read)
	moveHalfTheBenchFleet(b, true)
	b.Run("fleet=half-dra", read)
	moveHalfTheBenchFleet(b, false)
	b.Run("fleet=device-plugin-only-again", read)
}

// benchDRALabel marks the objects moveHalfTheBenchFleet creates, so that
// moving back deletes them in one request per kind.
const benchDRALabel = "bench.gpuinfra.io/dra"

// moveHalfTheBenchFleet turns the odd bench nodes into DRA nodes and
// allocates benchDRAClaims of their GPUs (toDRA), or turns them back into
// device-plugin nodes, through the API.
func moveHalfTheBenchFleet(b *testing.B, toDRA bool) {
	ctx := context.Background()
	client, _ := countingClient(b, true)
	gpusOf := []int64{8, 8, 1, 1} // createBenchFleet's products, in turn
	err := parallel(benchNodes/2, func(i int) error {
		node := fmt.Sprintf("bench-%05d", 2*i+1)
		gpus := gpusOf[(2*i+1)%len(gpusOf)]
		var capacity any // null: the strategic merge patch removes the key
		if !toDRA {
			capacity = strconv.FormatInt(gpus, 10)
		}
		patch, err := json.Marshal(map[string]any{"status": map[string]any{
			"capacity": map[string]any{string(ResourceGPU): capacity}, "allocatable": map[string]any{string(ResourceGPU): capacity},
		}})
		if err != nil {
			return err
		}
		if _, err := client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("patching the GPU capacity of node %s: %w", node, err)
		}
		if !toDRA {
			return nil
		}
		devices := make([]resourcev1.Device, gpus)
		for k := range devices {
			devices[k] = testGPUDevice(k, "NVIDIA A100-SXM4-40GB", 40)
		}
		slice := inventoryTestSlice(node, node, 1, devices...)
		slice.Labels = map[string]string{benchDRALabel: "true"}
		_, err = client.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	if !toDRA {
		byLabel := metav1.ListOptions{LabelSelector: benchDRALabel}
		if err := client.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, byLabel); err != nil {
			b.Fatal(err)
		}
		if err := client.ResourceV1().ResourceClaims("bench").DeleteCollection(ctx, metav1.DeleteOptions{}, byLabel); err != nil {
			b.Fatal(err)
		}
		return
	}
	// Claim i holds device gpu-(i / 1250) of A100 node 4*(i%1250)+1: at most
	// one claim per device.
	a100Nodes := benchNodes / 4
	err = parallel(benchDRAClaims, func(i int) error {
		return createAllocatedClaim(ctx, client, fmt.Sprintf("bench-claim-%05d", i),
			fmt.Sprintf("bench-%05d", 4*(i%a100Nodes)+1), fmt.Sprintf("gpu-%d", i/a100Nodes))
	})
	if err != nil {
		b.Fatal(err)
	}
}

// createAllocatedClaim creates a one-GPU claim in namespace bench and writes
// the allocation a scheduler would: device of node's pool.
func createAllocatedClaim(ctx context.Context, client kubernetes.Interface, name, node, device string) error {
	claims := client.ResourceV1().ResourceClaims("bench")
	claim, err := claims.Create(ctx, &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{benchDRALabel: "true"}},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name:    "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: nvdra.DeviceClassGPU, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating claim %s: %w", name, err)
	}
	claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
		Request: "gpu", Driver: nvdra.DriverName, Pool: node, Device: device,
	}}}}
	if _, err := claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("allocating claim %s: %w", name, err)
	}
	return nil
}
