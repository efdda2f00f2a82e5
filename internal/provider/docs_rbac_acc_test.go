package provider

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// documentedClusterRoles are the ClusterRoles docs/index.md's
// Compatibility section gives, by name.
func documentedClusterRoles(t *testing.T) map[string]rbacv1.ClusterRole {
	t.Helper()
	page, err := os.ReadFile("../../docs/index.md")
	require.NoError(t, err)
	roles := map[string]rbacv1.ClusterRole{}
	for _, block := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(page, -1) {
		var role rbacv1.ClusterRole
		require.NoError(t, yaml.UnmarshalStrict(block[1], &role))
		require.Equal(t, "ClusterRole", role.Kind)
		roles[role.Name] = role
	}
	return roles
}

// tokenWithDocumentedRoles is a token of a new service account bound to
// the documented ClusterRoles names (and nothing else).
func tokenWithDocumentedRoles(t *testing.T, account string, names ...string) string {
	t.Helper()
	ctx := context.Background()
	client := cluster.Client()
	roles := documentedClusterRoles(t)
	accounts := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault)
	_, err := accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = accounts.Delete(context.Background(), account, metav1.DeleteOptions{}) })
	for _, name := range names {
		role, ok := roles[name]
		require.True(t, ok, "docs/index.md has no ClusterRole %s", name)
		role.Name = account + "-" + name
		_, err := client.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = client.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
		})
		_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: metav1.NamespaceDefault, Name: account}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = client.RbacV1().ClusterRoleBindings().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
		})
	}
	request, err := accounts.CreateToken(ctx, account, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	return request.Status.Token
}

// The README's first example, applied and destroyed by an identity that
// holds only the ClusterRoles the docs give for gpu_device_plugin,
// gpu_workload and gpu_inventory.
func TestAccCompatibility_documentedRBACIsEnoughForTheFirstExample(t *testing.T) {
	testAccPreCheck(t)
	token := tokenWithDocumentedRoles(t, "terraform-documented",
		"terraform-gpu-device-plugin", "terraform-gpu-workload", "terraform-gpu-inventory")
	bareDevicePluginTestNodes(t, "rbac", map[string]string{"dp-rbac-g5-0": "g5.xlarge"})
	work := testNamespace(t, "dp-rbac-work")
	config := fmt.Sprintf(`
provider "gpu" {
  kubernetes {
    host                   = %q
    cluster_ca_certificate = %q
    token                  = %q
  }
}

resource "gpu_device_plugin" "nvidia" {
  namespace     = "dp-rbac"
  node_selector = { "gpu-test" = "rbac" }
  gpu_feature_discovery {}
}

data "gpu_inventory" "a10g" {
  source = "kubernetes"
  filter {
    product = "A10G"
  }
  depends_on = [gpu_workload.train]
}
`, cluster.APIServerURL(), cluster.RESTConfig().CAData, token) + a10gTrainingJob(work, "rbac", "gpu_device_plugin.nvidia")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccDevicePluginDestroyed("dp-rbac", "nvidia-device-plugin", true),
		Steps: []resource.TestStep{{
			PreConfig: withEnvironment(t, nil),
			Config:    config,
			Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr("gpu_workload.train", "status", "Complete"),
				resource.TestCheckResourceAttr("gpu_workload.train", "node_names.0", "dp-rbac-g5-0"),
			),
		}},
	})
}
