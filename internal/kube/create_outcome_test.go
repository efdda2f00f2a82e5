package kube

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
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
	spec := ownershipTestSpec("lost-daemonset")
	t.Cleanup(func() {
		_ = cluster.Client().CoreV1().Namespaces().Delete(context.Background(), spec.Namespace, metav1.DeleteOptions{})
	})
	client, lost := answerLosingClient(t, creates("daemonsets"))

	created, _, err := clusterOf(client).CreateDevicePlugin(ctx, spec, newTestOwnership(t))
	require.True(t, lost.Load(), "the DaemonSet's create was sent")
	require.ErrorIs(t, err, errAnswerLost)
	require.Zero(t, created, "everything the create made was removed again: nothing for the state")
	_, err = cluster.Client().AppsV1().DaemonSets(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the DaemonSet the API server created is deleted, though its answer was lost: %v", err)
	_, err = cluster.Client().CoreV1().ConfigMaps(spec.Namespace).Get(ctx, spec.ConfigMapName(), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "ConfigMap rolled back: %v", err)
	_, err = cluster.Client().CoreV1().Namespaces().Get(ctx, spec.Namespace, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the namespace it made is gone: %v", err)
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
