package main

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// fleetTypes are the instance types the fleet cycles through: four GPU
// products, so that by_product has four entries.
var fleetTypes = []string{"p5.48xlarge", "p4d.24xlarge", "g5.xlarge", "g4dn.xlarge"}

// benchNamespace holds the pods that take GPUs.
const benchNamespace = "inventory-bench"

// createFleet registers nodes kwok GPU nodes (with GPU Feature Discovery's
// labels, as the testbed's nodes have) and pods pods, each bound to an
// 8-GPU node and holding one GPU.
func createFleet(ctx context.Context, cluster *k8s.Cluster, nodes, pods int) error {
	specs := make([]k8s.NodeSpec, nodes)
	for i := range specs {
		it, ok := ec2catalog.Lookup(fleetTypes[i%len(fleetTypes)])
		if !ok {
			return fmt.Errorf("unknown instance type %s", fleetTypes[i%len(fleetTypes)])
		}
		specs[i] = k8s.NodeSpec{Name: fmt.Sprintf("bench-gpu-%05d", i), InstanceType: it, GFDLabeled: true}
	}
	if err := cluster.AddNodes(ctx, specs); err != nil {
		return err
	}
	client := cluster.Client()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	return parallel(pods, 16, func(i int) error {
		// Nodes 0, 1 mod 4 are the 8-GPU p5 and p4d.
		node := fmt.Sprintf("bench-gpu-%05d", (i*4)%nodes+i%2)
		return createBoundPod(ctx, client, fmt.Sprintf("hold-%05d", i), node)
	})
}

func createBoundPod(ctx context.Context, client kubernetes.Interface, name, node string) error {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	_, err := client.CoreV1().Pods(benchNamespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{{Key: gpulabels.TaintKey, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "hold", Image: "busybox",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{gpulabels.ResourceName: one}},
			}},
		},
	}, metav1.CreateOptions{})
	return err
}

func parallel(n, workers int, do func(int) error) error {
	work := make(chan int)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := do(i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	return firstErr
}
