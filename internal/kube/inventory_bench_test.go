package kube

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// benchFleet sizes the cluster of BenchmarkListInventory: the target
// is one read of 5,000 nodes in at most 1 s and 12 requests.
const (
	benchNodes    = 5000
	benchGPUPods  = 2000
	benchParallel = 32
)

var benchFleetOnce sync.Once

// createBenchFleet creates benchNodes GPU nodes and benchGPUPods pods bound
// to them, through the API, once per process.
func createBenchFleet(b *testing.B) {
	benchFleetOnce.Do(func() {
		ctx := context.Background()
		client, _ := countingClient(b, true)
		products := []struct {
			name   string
			gpus   int64
			memory int64
		}{
			{"NVIDIA-H100-80GB-HBM3", 8, 81559},
			{"NVIDIA-A100-SXM4-40GB", 8, 40960},
			{"NVIDIA-A10G", 1, 23028},
			{"Tesla-T4", 1, 15360},
		}
		_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		err = parallel(benchNodes, func(i int) error {
			p := products[i%len(products)]
			return createNode(ctx, client, plainGPUNode(fmt.Sprintf("bench-%05d", i), p.name, p.gpus, p.memory, nil))
		})
		if err != nil {
			b.Fatal(err)
		}
		err = parallel(benchGPUPods, func(i int) error {
			// Every pod on an 8-GPU node (H100 or A100: index ≡ 0 or 1 mod 4).
			node := fmt.Sprintf("bench-%05d", (i*4)%benchNodes+i%2)
			_, err := client.CoreV1().Pods("bench").Create(ctx, boundGPUPod(fmt.Sprintf("bench-pod-%05d", i), node, 1), metav1.CreateOptions{})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	})
}

func parallel(n int, do func(int) error) error {
	work := make(chan int)
	errs := make(chan error, benchParallel)
	var wg sync.WaitGroup
	for range benchParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			return err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// BenchmarkListInventory reads the inventory of a 5,000-node cluster as the
// provider does (protobuf, pages of 1,000), next to a baseline in the same
// process that reads it as a JSON client with kubectl's page size of 500
// would. bench/inventory.sh turns the two into a ratio.
func BenchmarkListInventory(b *testing.B) {
	requireCluster(b)
	createBenchFleet(b)
	for _, tc := range []struct {
		name     string
		protobuf bool
		pageSize int64
	}{
		{"provider=protobuf-page1000", true, DefaultPageSize},
		{"baseline=json-page500", false, 500},
	} {
		b.Run(tc.name, func(b *testing.B) {
			client, requests := countingClient(b, tc.protobuf)
			benchmarkInventoryReads(b, client, requests, tc.pageSize)
		})
	}
}

func benchmarkInventoryReads(b *testing.B, client kubernetes.Interface, requests interface{ Load() int64 }, pageSize int64) {
	ctx := context.Background()
	var (
		nodes        int
		draAllocated int64
	)
	start := requests.Load()
	b.ResetTimer()
	for b.Loop() {
		inv, err := clusterOf(client).ListInventory(ctx, InventoryOptions{PageSize: pageSize})
		if err != nil {
			b.Fatal(err)
		}
		nodes = len(inv.Nodes)
		draAllocated = inv.Totals().DRA.Allocated
	}
	b.ReportMetric(float64(requests.Load()-start)/float64(b.N), "requests/op")
	b.ReportMetric(float64(nodes), "nodes")
	b.ReportMetric(float64(draAllocated), "dra-allocated")
}
