package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// cluster is this package's testbed: a real API server. The nodes these tests
// create are not kwok-managed, so nothing but the test changes them.
var cluster *k8s.Cluster

func TestMain(m *testing.M) {
	c := k8s.New(k8s.Options{})
	os.Exit(testbed.Main(m, testbed.Options{Backends: []testbed.Backend{c}}, func(*testbed.Testbed) { cluster = c }))
}

func requireCluster(t testing.TB) {
	t.Helper()
	testbed.SkipIfUnavailable(t)
}

// countingClient is a protobuf clientset (as the provider builds it) that
// counts the HTTP requests it sends, or a JSON one for baselines.
func countingClient(t testing.TB, protobuf bool) (kubernetes.Interface, *atomic.Int64) {
	t.Helper()
	var requests atomic.Int64
	cfg := rest.CopyConfig(cluster.RESTConfig())
	cfg.QPS, cfg.Burst = -1, 0
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			requests.Add(1)
			return rt.RoundTrip(r)
		})
	}
	var (
		client kubernetes.Interface
		err    error
	)
	if protobuf {
		var c *Cluster
		if c, err = Connect(cfg, ClusterOptions{}); err == nil {
			client = c.client
		}
	} else {
		client, err = kubernetes.NewForConfig(cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return client, &requests
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// plainGPUNode is a node with GFD labels and GPU capacity that no kwok
// manages: its status is what the test writes.
func plainGPUNode(name, product string, gpus, memoryMiB int64, extra map[string]string) *corev1.Node {
	labels := map[string]string{
		gpulabels.Present:      "true",
		gpulabels.Product:      product,
		gpulabels.Memory:       strconv.FormatInt(memoryMiB, 10),
		gpulabels.Count:        strconv.FormatInt(gpus, 10),
		gpulabels.ComputeMajor: "8",
		gpulabels.ComputeMinor: "0",
		gpulabels.InstanceType: "p4d.24xlarge",
	}
	for k, v := range extra {
		labels[k] = v
	}
	q := *resource.NewQuantity(gpus, resource.DecimalSI)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: gpulabels.TaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{ResourceGPU: q, corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{ResourceGPU: q, corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
		},
	}
}

// createNode creates the node and writes its status (capacity, conditions),
// which a create alone does not persist for a Node.
func createNode(ctx context.Context, client kubernetes.Interface, node *corev1.Node) error {
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating node %s: %w", node.Name, err)
	}
	// A patch, not an update: the node controller may already have changed the node.
	patch, err := json.Marshal(map[string]any{"status": node.Status})
	if err != nil {
		return err
	}
	if _, err := client.CoreV1().Nodes().PatchStatus(ctx, node.Name, patch); err != nil {
		return fmt.Errorf("writing status of node %s: %w", node.Name, err)
	}
	return nil
}

// boundGPUPod is a pod already bound to node (no scheduler involved) asking for gpus.
func boundGPUPod(name, node string, gpus int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name:  "cuda",
				Image: "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)},
				},
			}},
		},
	}
}
