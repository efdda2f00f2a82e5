package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestListInventoryWithoutDRA reads the inventory of a cluster that does not
// serve resource.k8s.io/v1 (Kubernetes before 1.34, or the API turned off):
// the device-plugin counts as ever, DRA reported as not served, no error.
// The testbed serves the API, so a proxy in front of it sends the requests
// for resource.k8s.io/v1 to a version no server has, and the real API
// server answers them with its own 404.
func TestListInventoryWithoutDRA(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	admin := cluster.Client()

	labels := map[string]string{"suite": "inventory-no-dra"}
	require.NoError(t, createNode(ctx, admin, plainGPUNode("inv-nodra-0", "Tesla-T4", 1, 15360, labels)))
	require.NoError(t, createNode(ctx, admin, draOnlyNode("inv-nodra-1", labels)))
	createSlices(t, admin, inventoryTestSlice("inv-nodra-1", "inv-nodra-1", 1, testGPUDevice(0, "NVIDIA L4", 22)))

	client := clusterWithoutDRA(t)
	_, err := client.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	require.Error(t, err, "the proxy hides resource.k8s.io/v1")

	inv, err := client.ListInventory(ctx, InventoryOptions{LabelSelector: "suite=inventory-no-dra"})
	require.NoError(t, err)
	require.False(t, inv.DRAServed)
	require.Contains(t, inv.DRANotServed, "does not serve resource.k8s.io/v1", "RequireDRA's reason")
	require.Contains(t, inv.DRANotServed, "Kubernetes v1.", "naming the cluster's version")
	require.Len(t, inv.Nodes, 1, "the node whose GPUs only DRA offers is not seen")
	n := inv.Nodes[0]
	require.Equal(t, "inv-nodra-0", n.Name)
	require.Equal(t, GPUPathDevicePlugin, n.GPUPath)
	require.Equal(t, int64(1), n.Free)
	require.Equal(t, DeviceCounts{}, n.DRA)
}

// clusterWithoutDRA connects through a proxy to the testbed's API server that
// rewrites /apis/resource.k8s.io/v1 (discovery and resources) to
// /apis/resource.k8s.io/v0.
func clusterWithoutDRA(t *testing.T) *Cluster {
	t.Helper()
	upstream := rest.CopyConfig(cluster.RESTConfig())
	transport, err := rest.TransportFor(upstream)
	require.NoError(t, err)
	target, err := url.Parse(upstream.Host)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/apis/resource.k8s.io/v1" || strings.HasPrefix(r.URL.Path, "/apis/resource.k8s.io/v1/") {
			r.URL.Path = "/apis/resource.k8s.io/v0" + strings.TrimPrefix(r.URL.Path, "/apis/resource.k8s.io/v1")
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := Connect(&rest.Config{Host: srv.URL}, ClusterOptions{})
	require.NoError(t, err)
	return c
}
