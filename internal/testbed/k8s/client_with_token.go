package k8s

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ClientWithToken is a client of the testbed's API server that
// authenticates with a bearer token (a service account's, say) instead of
// the admin's client certificate, trusting the testbed's CA.
func (c *Cluster) ClientWithToken(token string) (kubernetes.Interface, error) {
	admin := c.RESTConfig()
	cfg := &rest.Config{
		Host:            admin.Host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, CAFile: admin.CAFile, ServerName: admin.ServerName},
	}
	return kubernetes.NewForConfig(cfg)
}

// ServiceAccountToken creates the service account name in the default
// namespace, bound to cluster-admin, and returns a token for it; the test's
// end deletes both.
func (c *Cluster) ServiceAccountToken(t testing.TB, name string) string {
	t.Helper()
	ctx := context.Background()
	accounts := c.client.CoreV1().ServiceAccounts(metav1.NamespaceDefault)
	if _, err := accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating service account %s: %v", name, err)
	}
	t.Cleanup(func() { _ = accounts.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	bindings := c.client.RbacV1().ClusterRoleBindings()
	_, err := bindings.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: metav1.NamespaceDefault, Name: name}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("binding service account %s to cluster-admin: %v", name, err)
	}
	t.Cleanup(func() { _ = bindings.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	request, err := accounts.CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for service account %s: %v", name, err)
	}
	return request.Status.Token
}
