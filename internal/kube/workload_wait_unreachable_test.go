package kube

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// suspendedJob creates a Job that does not start until unsuspended, so a
// wait for its completion lasts as long as the test wants, and returns the
// spec a wait takes for it.
func suspendedJob(t *testing.T, name string) WorkloadSpec {
	t.Helper()
	spec := testJobSpec(1)
	spec.Name = name
	job := BuildJob(spec)
	job.Spec.Suspend = ptr.To(true)
	jobs := cluster.Client().BatchV1().Jobs(spec.Namespace)
	_, err := jobs.Create(context.Background(), job, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		background := metav1.DeletePropagationBackground
		_ = jobs.Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &background})
	})
	return spec
}

// proxiedCluster is a Cluster that reaches the testbed's API server through
// a proxy the test can cut, with the given unreachable limit.
func proxiedCluster(t *testing.T, limit time.Duration) (*Cluster, *cuttableProxy) {
	t.Helper()
	cfg := cluster.RESTConfig()
	u, err := url.Parse(cfg.Host)
	require.NoError(t, err)
	proxy := newCuttableProxy(t, u.Host)
	cfg.Host = "https://" + proxy.addr // the serving certificate names 127.0.0.1, whatever the port
	c, err := Connect(cfg, ClusterOptions{UnreachableLimit: limit})
	require.NoError(t, err)
	return c, proxy
}

func TestWaitForWorkloadFailsOnceTheAPIServerStaysUnreachable(t *testing.T) {
	requireCluster(t)
	spec := suspendedJob(t, "unreachable-wait")
	spec.Job.Suspend = false // the wait's view: a Job to wait for
	c, proxy := proxiedCluster(t, 3*time.Second)

	// The wait would last the minute of its context; the API server goes
	// away under it and stays away.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitErr := startWaiting(t, ctx, c, spec)
	cutAt := time.Now()
	proxy.cut()

	err := <-waitErr
	require.Error(t, err)
	require.True(t, IsUnreachable(err), "got %v", err)
	var unreachable *UnreachableError
	require.True(t, errors.As(err, &unreachable))
	require.False(t, unreachable.Since.Before(cutAt.Add(-time.Second)), "the stretch began at the cut, not before")
	require.Contains(t, err.Error(), "unreachable since")
	require.NoError(t, ctx.Err(), "it failed on unreachability, not on its own timeout")
}

func TestWaitForWorkloadRidesOutAnAPIServerRestart(t *testing.T) {
	requireCluster(t)
	spec := suspendedJob(t, "unreachable-restart")
	spec.Job.Suspend = false
	c, proxy := proxiedCluster(t, time.Minute)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waitErr := startWaiting(t, ctx, c, spec)
	// A short outage, as an API server restart makes: connections drop and
	// new ones are refused for a moment.
	proxy.cut()
	time.Sleep(2 * time.Second) // the outage itself, not a wait for a condition
	proxy.restore()

	restoredAt := time.Now()
	require.Eventually(t, func() bool { return answeredSince(c, restoredAt) }, 90*time.Second, 50*time.Millisecond,
		"the wait's informer reconnects after the outage")

	// An event made after the outage reaches the wait: it is still watching.
	background := metav1.DeletePropagationBackground
	require.NoError(t, cluster.Client().BatchV1().Jobs(spec.Namespace).Delete(context.Background(), spec.Name,
		metav1.DeleteOptions{PropagationPolicy: &background}))
	err := <-waitErr
	require.ErrorContains(t, err, "the Job was deleted while waiting", "the outage did not end the wait; the deletion did")
	require.False(t, IsUnreachable(err))
}

// startWaiting starts WaitForWorkload on spec and returns, once the API
// server has answered the wait, the channel its error will come on.
func startWaiting(t *testing.T, ctx context.Context, c *Cluster, spec WorkloadSpec) <-chan error {
	t.Helper()
	waitErr := make(chan error, 1)
	go func() {
		_, err := c.WaitForWorkload(ctx, spec)
		waitErr <- err
	}()
	require.Eventually(t, func() bool { return answeredOnce(c) }, 20*time.Second, 20*time.Millisecond)
	return waitErr
}

// answeredOnce reports whether the API server has answered c at least once.
func answeredOnce(c *Cluster) bool { return answeredSince(c, time.Time{}) }

// answeredSince reports whether the API server has answered c after t.
func answeredSince(c *Cluster, t time.Time) bool {
	c.reach.mu.Lock()
	defer c.reach.mu.Unlock()
	return c.reach.lastAnswer.After(t)
}
