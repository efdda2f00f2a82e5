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
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
	createNodeForTest(t, admin, plainGPUNode("inv-nodra-0", "Tesla-T4", 1, 15360, labels))
	createNodeForTest(t, admin, draOnlyNode("inv-nodra-1", labels))
	createSlices(t, admin, inventoryTestSlice("inv-nodra-1", "inv-nodra-1", 1, testGPUDevice(0, "NVIDIA L4", 22)))

	client := clusterWithoutDRA(t)
	_, err := client.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	require.Error(t, err, "the proxy hides resource.k8s.io/v1")

	inv, err := client.ListInventory(ctx, InventoryOptions{LabelSelector: "suite=inventory-no-dra"})
	require.NoError(t, err)
	require.False(t, inv.DRAServed)
	require.Contains(t, inv.DRAUnavailable, "does not serve resource.k8s.io/v1", "RequireDRA's reason")
	require.Contains(t, inv.DRAUnavailable, "Kubernetes v1.", "naming the cluster's version")
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

// TestListInventoryWithoutDRAPermissions reads the inventory with
// credentials that may list nodes and pods but not resource.k8s.io's
// ResourceSlices, or not its ResourceClaims: the device-plugin counts, and
// a reason instead of DRA counts (published devices without allocations
// would show taken GPUs free), never an error.
func TestListInventoryWithoutDRAPermissions(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	admin := cluster.Client()
	labels := map[string]string{"suite": "inventory-dra-rbac"}
	createNodeForTest(t, admin, plainGPUNode("inv-rbac-dp", "Tesla-T4", 1, 15360, labels))
	createNodeForTest(t, admin, draOnlyNode("inv-rbac-dra", labels))
	createSlices(t, admin, inventoryTestSlice("inv-rbac-dra", "inv-rbac-dra", 1, testGPUDevice(0, "NVIDIA L4", 22)))

	for _, tc := range []struct {
		name      string
		dra       []string // resources of resource.k8s.io the credentials may list
		forbidden string
	}{
		{"inventory-no-slices", nil, "ResourceSlices"},
		{"inventory-no-claims", []string{"resourceslices"}, "ResourceClaims"},
	} {
		t.Run(tc.forbidden, func(t *testing.T) {
			c := clusterWithRules(t, tc.name,
				rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"list"}},
				rbacv1.PolicyRule{APIGroups: []string{"resource.k8s.io"}, Resources: append([]string{"deviceclasses"}, tc.dra...), Verbs: []string{"list"}})
			inv, err := c.ListInventory(ctx, InventoryOptions{LabelSelector: "suite=inventory-dra-rbac"})
			require.NoError(t, err)
			require.True(t, inv.DRAServed)
			require.Contains(t, inv.DRAUnavailable, "may not list "+tc.forbidden)
			require.Len(t, inv.Nodes, 1, "the node whose GPUs only DRA offers is not counted")
			require.Equal(t, GPUPathDevicePlugin, inv.Nodes[0].GPUPath)
			require.Equal(t, int64(1), inv.Nodes[0].Free)
		})
	}
}

// clusterWithRules connects as a new service account that a ClusterRole of
// rules binds; the test's end deletes all three.
func clusterWithRules(t *testing.T, name string, rules ...rbacv1.PolicyRule) *Cluster {
	t.Helper()
	ctx := context.Background()
	admin := cluster.Client()
	_, err := admin.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: metav1.NamespaceDefault, Name: name}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
		_ = admin.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Delete(ctx, name, metav1.DeleteOptions{})
	})
	token, err := admin.CoreV1().ServiceAccounts(metav1.NamespaceDefault).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := cluster.RESTConfig()
	c, err := Connect(&rest.Config{Host: cfg.Host, BearerToken: token.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData, CAFile: cfg.CAFile, ServerName: cfg.ServerName}}, ClusterOptions{})
	require.NoError(t, err)
	return c
}
