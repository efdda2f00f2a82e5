package kube

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// These tests hold the rules of ownership against the testbed's API
// server: a create never takes over what exists, a destroy deletes only
// what its resource made, and a namespace goes only when it is empty of
// everything else.

func ownershipTestSpec(namespace string) DevicePluginSpec {
	spec := testDevicePluginSpec()
	spec.Namespace = namespace
	return spec
}

func newTestOwnership(t *testing.T) Ownership {
	t.Helper()
	o, err := NewOwnership()
	require.NoError(t, err)
	return o
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestOwnershipRules(t *testing.T) {
	o := Ownership{ID: "tf-a"}
	require.True(t, o.Owns("tf-a"))
	require.False(t, o.Owns("tf-b"), "another resource's object")
	require.False(t, o.Owns(""), "an unmarked object is not claimed by a resource that created its own")
	require.True(t, Ownership{ID: "tf-a", ClaimsUnmarked: true}.Owns(""), "an imported resource claims the unmarked objects it adopted")
	require.False(t, Ownership{ID: "tf-a", ClaimsUnmarked: true}.Owns("tf-b"), "but never another resource's")
	a, b := newTestOwnership(t), newTestOwnership(t)
	require.NotEqual(t, a.ID, b.ID)
}

func TestDevicePluginNamespaceKeptWhileOthersUseIt(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	client := cluster.Client()
	c := clusterOf(client)
	spec := ownershipTestSpec("own-ns-kept")
	owner := newTestOwnership(t)

	created, _, err := c.CreateDevicePlugin(ctx, spec, owner)
	require.NoError(t, err)
	require.True(t, created.NamespaceCreated)
	// A user puts an NGC pull secret and a ConfigMap of their own there.
	_, err = client.CoreV1().Secrets(spec.Namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "ngc"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().ConfigMaps(spec.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "notes"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	deleted, err := c.DeleteDevicePlugin(ctx, spec, owner, NamespaceDeletion{Created: true})
	require.NoError(t, err)
	require.NotNil(t, deleted.NamespaceKept, "the namespace holds the user's objects")
	require.ElementsMatch(t, []string{"Secret/ngc", "ConfigMap/notes"}, deleted.NamespaceKept.Foreign)
	_, err = client.CoreV1().Secrets(spec.Namespace).Get(ctx, "ngc", metav1.GetOptions{})
	require.NoError(t, err, "the user's Secret survives the destroy")
	_, err = client.AppsV1().DaemonSets(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the plugin itself is gone: %v", err)
	_, err = client.CoreV1().ConfigMaps(spec.Namespace).Get(ctx, spec.ConfigMapName(), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "its config too: %v", err)

	// Opting in deletes the namespace with what is in it.
	deleted, err = c.DeleteDevicePlugin(ctx, spec, owner, NamespaceDeletion{Created: true, EvenIfNotEmpty: true})
	require.NoError(t, err)
	require.Nil(t, deleted.NamespaceKept)
	_, err = client.CoreV1().Namespaces().Get(ctx, spec.Namespace, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "deleted on opt-in: %v", err)
}

func TestDevicePluginEmptyNamespaceDeleted(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	client := cluster.Client()
	c := clusterOf(client)
	spec := ownershipTestSpec("own-ns-empty")
	spec.DCGM = &DCGMSpec{Image: DefaultDCGMExporterImage, Port: DefaultDCGMExporterPort}
	spec.GFD = &GFDSpec{}
	owner := newTestOwnership(t)
	_, _, err := c.CreateDevicePlugin(ctx, spec, owner)
	require.NoError(t, err)

	// The private state that said "created" was lost (an old state, a
	// moved resource): the namespace's marker says it all the same.
	deleted, err := c.DeleteDevicePlugin(ctx, spec, owner, NamespaceDeletion{})
	require.NoError(t, err)
	require.Nil(t, deleted.NamespaceKept, "only what the plugin made (and Kubernetes' own objects) was there")
	require.Empty(t, deleted.Left)
	_, err = client.CoreV1().Namespaces().Get(ctx, spec.Namespace, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestDevicePluginExistingNamespaceNeverDeleted(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	client := cluster.Client()
	c := clusterOf(client)
	spec := ownershipTestSpec("own-ns-existing")
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: spec.Namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = client.CoreV1().Namespaces().Delete(context.Background(), spec.Namespace, metav1.DeleteOptions{})
	})
	owner := newTestOwnership(t)
	created, _, err := c.CreateDevicePlugin(ctx, spec, owner)
	require.NoError(t, err)
	require.False(t, created.NamespaceCreated)
	_, err = c.DeleteDevicePlugin(ctx, spec, owner, NamespaceDeletion{EvenIfNotEmpty: true})
	require.NoError(t, err)
	ns, err := client.CoreV1().Namespaces().Get(ctx, spec.Namespace, metav1.GetOptions{})
	require.NoError(t, err, "a namespace the resource did not create stays, whatever the opt-in says")
	require.Nil(t, ns.DeletionTimestamp)
}

func TestDevicePluginCreateRefusesAndRollsBack(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	client := cluster.Client()
	c := clusterOf(client)
	spec := ownershipTestSpec("own-rollback")
	spec.DCGM = &DCGMSpec{Image: DefaultDCGMExporterImage, Port: DefaultDCGMExporterPort}
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: spec.Namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = client.CoreV1().Namespaces().Delete(context.Background(), spec.Namespace, metav1.DeleteOptions{})
	})
	// Someone's Service has the name of the exporter's: the plugin's
	// ConfigMap and DaemonSets are created before it is reached.
	foreign, err := client.CoreV1().Services(spec.Namespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: spec.DCGMName()},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	created, _, err := c.CreateDevicePlugin(ctx, spec, newTestOwnership(t))
	var exists *ExistsError
	require.ErrorAs(t, err, &exists)
	require.Equal(t, "Service", exists.Kind)
	require.Zero(t, created, "what the create made was removed again: nothing for the state")
	for _, name := range spec.DaemonSetNames() {
		_, err := client.AppsV1().DaemonSets(spec.Namespace).Get(ctx, name, metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "DaemonSet %s rolled back: %v", name, err)
	}
	_, err = client.CoreV1().ConfigMaps(spec.Namespace).Get(ctx, spec.ConfigMapName(), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "ConfigMap rolled back: %v", err)
	svc, err := client.CoreV1().Services(spec.Namespace).Get(ctx, spec.DCGMName(), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, foreign.UID, svc.UID, "the foreign Service is untouched")
	require.Empty(t, svc.Annotations[AnnotationOwner])
}

func TestTwoDevicePluginsNeverShareObjects(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	c := clusterOf(cluster.Client())
	spec := ownershipTestSpec("own-two")
	first, second := newTestOwnership(t), newTestOwnership(t)
	_, _, err := c.CreateDevicePlugin(ctx, spec, first)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = c.DeleteDevicePlugin(context.Background(), spec, first, NamespaceDeletion{Created: true, EvenIfNotEmpty: true})
	})

	other := spec
	other.Image = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
	_, _, err = c.CreateDevicePlugin(ctx, other, second)
	var exists *ExistsError
	require.ErrorAs(t, err, &exists, "a second create is refused")

	// Nor can the second one update or delete the first one's objects.
	_, err = c.UpdateDevicePlugin(ctx, other, other, second)
	var notOwned *NotOwnedError
	require.ErrorAs(t, err, &notOwned)
	require.Equal(t, first.ID, notOwned.Marker)
	deleted, err := c.DeleteDevicePlugin(ctx, other, second, NamespaceDeletion{Created: true, EvenIfNotEmpty: true})
	require.NoError(t, err)
	require.NotEmpty(t, deleted.Left)
	ds, err := c.client.AppsV1().DaemonSets(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
	require.NoError(t, err, "the first one's DaemonSet is still there")
	require.Equal(t, DefaultDevicePluginImage, ds.Spec.Template.Spec.Containers[0].Image)
	_, err = c.client.CoreV1().Namespaces().Get(ctx, spec.Namespace, metav1.GetOptions{})
	require.NoError(t, err, "and its namespace")
}

func TestWorkloadOwnership(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	client := cluster.Client()
	c := clusterOf(client)
	spec := testJobSpec(1)
	spec.Kind = WorkloadDeployment
	spec.Name = "owned-deployment"
	spec.Namespace = "default"
	spec.Deployment = DeploymentSettings{Replicas: ptr.To[int32](1), Strategy: appsv1.RollingUpdateDeploymentStrategyType}
	spec.Pod.Container.Env = map[string]string{"NCCL_DEBUG": "INFO"}
	// Its pods stay Pending: other tests' nodes have no kubelet that would
	// confirm a pod's deletion, and the destroy waits for the pods.
	spec.Pod.NodeSelector = map[string]string{"gpu-test": "ownership-none"}
	owner := newTestOwnership(t)

	created, err := c.CreateWorkload(ctx, spec, owner)
	require.NoError(t, err)
	require.True(t, created)
	t.Cleanup(func() {
		_ = client.AppsV1().Deployments("default").Delete(context.Background(), spec.Name, metav1.DeleteOptions{})
	})

	t.Run("A second create of the same name is refused, atomically.", func(t *testing.T) {
		created, err := c.CreateWorkload(ctx, spec, newTestOwnership(t))
		var exists *ExistsError
		require.ErrorAs(t, err, &exists)
		require.False(t, created)
	})
	t.Run("An update takes back a field another manager changed, and says whose.", func(t *testing.T) {
		patch := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"owned-deployment"},"spec":{"replicas":3}}`)
		_, err := client.AppsV1().Deployments("default").Patch(ctx, spec.Name, types.ApplyPatchType, patch,
			metav1.PatchOptions{FieldManager: "kubectl-scale-test", Force: ptr.To(true)})
		require.NoError(t, err)
		warning, err := c.UpdateWorkload(ctx, spec, owner)
		require.NoError(t, err)
		require.Contains(t, warning, `.spec.replicas (set by "kubectl-scale-test")`)
		dep, err := client.AppsV1().Deployments("default").Get(ctx, spec.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.EqualValues(t, 1, *dep.Spec.Replicas)

		warning, err = c.UpdateWorkload(ctx, spec, owner)
		require.NoError(t, err)
		require.Empty(t, warning, "nothing to take back the second time")
	})
	t.Run("What the configuration drops after the create is removed: the create's fields belong to the applier.", func(t *testing.T) {
		withoutEnv := spec
		withoutEnv.Pod.Container.Env = nil
		_, err := c.UpdateWorkload(ctx, withoutEnv, owner)
		require.NoError(t, err)
		dep, err := client.AppsV1().Deployments("default").Get(ctx, spec.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Empty(t, dep.Spec.Template.Spec.Containers[0].Env)
		for _, entry := range dep.ManagedFields {
			if entry.Manager == FieldManager {
				require.Equal(t, metav1.ManagedFieldsOperationApply, entry.Operation, "no Update entry of this provider is left to hold fields")
			}
		}
	})
	t.Run("A destroy leaves an object of that name that someone else made.", func(t *testing.T) {
		other := newTestOwnership(t)
		err := c.DeleteWorkload(ctx, spec.Ref(), other)
		var notOwned *NotOwnedError
		require.True(t, errors.As(err, &notOwned), "%v", err)
		_, err = client.AppsV1().Deployments("default").Get(ctx, spec.Name, metav1.GetOptions{})
		require.NoError(t, err)
	})
	t.Run("Its own destroy deletes it.", func(t *testing.T) {
		require.NoError(t, c.DeleteWorkload(ctx, spec.Ref(), owner))
		_, err := client.AppsV1().Deployments("default").Get(ctx, spec.Name, metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "%v", err)
	})
}

// lostAnswers is a transport that carries every request out but, for the
// ones lose picks, drops the API server's answer: the create happened and
// the client cannot know.
func lostAnswers(lose func(*http.Request) bool) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil && lose(r) {
				_ = resp.Body.Close()
				return nil, errors.New("connection reset by peer")
			}
			return resp, err
		})
	}
}

func TestCreateWorkloadWhoseAnswerIsLost(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	cfg := rest.CopyConfig(cluster.RESTConfig())
	cfg.WrapTransport = lostAnswers(func(r *http.Request) bool { return r.Method == http.MethodPost })
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	spec := testJobSpec(1)
	spec.Namespace, spec.Name = "default", "answer-lost"
	spec.Pod.NodeSelector = map[string]string{"gpu-test": "ownership-none"} // Pending: holds no other test's GPU
	t.Cleanup(func() {
		_ = cluster.Client().BatchV1().Jobs("default").Delete(context.Background(), spec.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	})

	created, err := clusterOf(client).CreateWorkload(ctx, spec, newTestOwnership(t))
	require.Error(t, err)
	require.True(t, created, "the Job exists: the caller must keep it in the state, or it is orphaned")
	require.Contains(t, err.Error(), "may have been created")

	// Nothing was created when the request never reached the server.
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPost {
				return nil, errors.New("dial tcp: connection refused")
			}
			return rt.RoundTrip(r)
		})
	}
	client, err = kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	spec.Name = "never-sent"
	created, err = clusterOf(client).CreateWorkload(ctx, spec, newTestOwnership(t))
	require.Error(t, err)
	require.False(t, created, "the look afterwards found nothing: no state")
}
