package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// errAnswerLost is what answerLosingClient's caller gets instead of the
// API server's answer.
var errAnswerLost = errors.New("connection reset before the answer arrived")

// answerLosingClient is a clientset whose first request that lose matches
// reaches the API server and is carried out, but whose answer is lost.
func answerLosingClient(t *testing.T, lose func(*http.Request) bool) (kubernetes.Interface, *atomic.Bool) {
	t.Helper()
	lost := new(atomic.Bool)
	cfg := rest.CopyConfig(cluster.RESTConfig())
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err != nil || !lose(r) || !lost.CompareAndSwap(false, true) {
				return resp, err
			}
			resp.Body.Close()
			return nil, errAnswerLost
		})
	}
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return client, lost
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func creates(resource string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/"+resource)
	}
}

func TestDevicePluginCreateWhoseAnswerIsLostRollsBackWhatItMade(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	client := cluster.Client()
	tests := []struct {
		description string
		lose        string // the resource whose create's answer is lost
		gone        func(spec DevicePluginSpec) error
	}{
		{"The plugin's DaemonSet, in a namespace that was there before.", "daemonsets", func(spec DevicePluginSpec) error {
			_, err := client.AppsV1().DaemonSets(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
			return err
		}},
		{"The RuntimeClass, which no namespace holds.", "runtimeclasses", func(spec DevicePluginSpec) error {
			_, err := client.NodeV1().RuntimeClasses().Get(ctx, spec.RuntimeClass.Name, metav1.GetOptions{})
			return err
		}},
	}
	for i, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			spec := ownershipTestSpec(fmt.Sprintf("lost-answer-%d", i))
			spec.RuntimeClass = &RuntimeClassSpec{Create: true, Name: spec.Namespace, Handler: "nvidia"}
			_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: spec.Namespace}}, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() {
				_ = client.CoreV1().Namespaces().Delete(context.Background(), spec.Namespace, metav1.DeleteOptions{})
				_ = client.NodeV1().RuntimeClasses().Delete(context.Background(), spec.RuntimeClass.Name, metav1.DeleteOptions{})
			})
			losing, lost := answerLosingClient(t, creates(tt.lose))

			created, _, err := clusterOf(losing).CreateDevicePlugin(ctx, spec, newTestOwnership(t))
			require.True(t, lost.Load(), "the create was sent")
			require.ErrorIs(t, err, errAnswerLost)
			require.Zero(t, created, "everything the create made was removed again: nothing for the state")
			err = tt.gone(spec)
			require.True(t, apierrors.IsNotFound(err), "the object the API server created is deleted, though its answer was lost: %v", err)
			_, err = client.CoreV1().ConfigMaps(spec.Namespace).Get(ctx, spec.ConfigMapName(), metav1.GetOptions{})
			require.True(t, apierrors.IsNotFound(err), "ConfigMap rolled back: %v", err)
			_, err = client.CoreV1().Namespaces().Get(ctx, spec.Namespace, metav1.GetOptions{})
			require.NoError(t, err, "the namespace that was there before stays")
		})
	}
}

func TestDevicePluginCreateWhoseNamespaceAnswerIsLostRollsItBack(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	spec := ownershipTestSpec("lost-namespace")
	t.Cleanup(func() {
		_ = cluster.Client().CoreV1().Namespaces().Delete(context.Background(), spec.Namespace, metav1.DeleteOptions{})
	})
	client, lost := answerLosingClient(t, creates("namespaces"))

	created, _, err := clusterOf(client).CreateDevicePlugin(ctx, spec, newTestOwnership(t))
	require.True(t, lost.Load(), "the namespace's create was sent")
	require.ErrorIs(t, err, errAnswerLost)
	require.Zero(t, created)
	_, err = cluster.Client().CoreV1().Namespaces().Get(ctx, spec.Namespace, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the namespace the API server created is gone: %v", err)
}

func TestWorkloadCreateWhoseAnswerIsLostIsKept(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	spec := testJobSpec(1)
	spec.Name = "lost-answer"
	client, lost := answerLosingClient(t, creates("jobs"))
	c := clusterOf(client)
	owner := newTestOwnership(t)
	t.Cleanup(func() { _ = c.DeleteWorkload(context.Background(), spec.Ref(), owner) })

	created, err := c.CreateWorkload(ctx, spec, owner)
	require.True(t, lost.Load(), "the Job's create was sent")
	require.ErrorIs(t, err, errAnswerLost)
	require.True(t, created, "the Job the API server made is this create's: the resource stays in the state")
	live, found, err := c.ReadWorkload(ctx, spec.Ref())
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, owner.ID, live.Spec.Owner)
}
