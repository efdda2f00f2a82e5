package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// requestLog records the requests a Cluster sends, and can cut the first
// WATCH of a path short, as a dropped connection or the API server's watch
// timeout would.
type requestLog struct {
	mu       sync.Mutex
	requests []string // "WATCH /apis/batch/v1/namespaces/ns/jobs", "GET ...", "LIST ..."
	// cutPath's first WATCH body is kept in cut, for the test to close.
	cutPath string
	cut     io.Closer
}

func (l *requestLog) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		verb := r.Method
		q := r.URL.Query()
		switch {
		case r.Method == http.MethodGet && q.Get("watch") == "true":
			verb = "WATCH"
		case r.Method == http.MethodGet && !strings.Contains(strings.TrimPrefix(r.URL.Path, "/api"), "/namespaces/") && strings.HasSuffix(r.URL.Path, "/nodes"),
			r.Method == http.MethodGet && isCollection(r.URL.Path):
			verb = "LIST"
		}
		resp, err := next.RoundTrip(r)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.requests = append(l.requests, verb+" "+r.URL.Path)
		if err == nil && verb == "WATCH" && r.URL.Path == l.cutPath && l.cut == nil {
			l.cut = resp.Body
		}
		return resp, err
	})
}

// isCollection reports whether path names a collection (…/jobs, …/pods)
// rather than one object (…/jobs/train).
func isCollection(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			return len(parts) == i+3
		}
	}
	return false
}

func (l *requestLog) count(verbAndPath string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.requests {
		if r == verbAndPath {
			n++
		}
	}
	return n
}

func (l *requestLog) cutWatch() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut == nil {
		return false
	}
	_ = l.cut.Close()
	return true
}

func (l *requestLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.requests, "\n")
}

// hubCluster is a Cluster on the testbed whose requests log records, with
// an informer linger of its own.
func hubCluster(t *testing.T, log *requestLog, linger time.Duration) *Cluster {
	t.Helper()
	cfg := cluster.RESTConfig()
	cfg.WrapTransport = log.wrap
	c, err := Connect(cfg, ClusterOptions{})
	require.NoError(t, err)
	c.hubOnce.Do(func() { c.hub = newInformerHub(c.client, linger) })
	return c
}

// hubNamespace creates a namespace and a kwok GPU node (8 GPUs) whose pods
// run and whose Jobs' pods succeed; Jobs of hubJob run there only.
func hubNamespace(t *testing.T, name string) string {
	t.Helper()
	requireCluster(t)
	createNamespace(t, name)
	p4d, ok := ec2catalog.Lookup("p4d.24xlarge")
	require.True(t, ok)
	node := name + "-gpu"
	require.NoError(t, cluster.AddNode(context.Background(), k8s.NodeSpec{Name: node, InstanceType: p4d}))
	t.Cleanup(func() {
		_ = cluster.DeleteNode(context.Background(), node)
		_ = cluster.Client().CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, cluster.WaitForNodesReady(ctx, node))
	return name
}

// hubJob creates a suspended one-GPU Job in namespace, pinned to the
// namespace's node, and returns the spec a wait takes for it (not
// suspended: a Job to wait for) and its UID.
func hubJob(t *testing.T, namespace, name string) (WorkloadSpec, types.UID) {
	t.Helper()
	spec := testJobSpec(1)
	spec.Namespace, spec.Name = namespace, name
	spec.Pod.NodeSelector = map[string]string{corev1.LabelHostname: namespace + "-gpu"}
	job := BuildJob(spec)
	job.Spec.Suspend = ptr.To(true)
	created, err := cluster.Client().BatchV1().Jobs(namespace).Create(context.Background(), job, metav1.CreateOptions{})
	require.NoError(t, err)
	return spec, created.UID
}

func unsuspend(t *testing.T, spec WorkloadSpec) {
	t.Helper()
	patch := []byte(`{"spec":{"suspend":false}}`)
	_, err := cluster.Client().BatchV1().Jobs(spec.Namespace).Patch(context.Background(), spec.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
}

type waitResult struct {
	status *WorkloadStatus
	err    error
}

// goWait runs WaitForWorkload on spec and returns the channel of its
// result.
func goWait(ctx context.Context, c *Cluster, spec WorkloadSpec) <-chan waitResult {
	done := make(chan waitResult, 1)
	go func() {
		status, err := c.WaitForWorkload(ctx, spec)
		done <- waitResult{status, err}
	}()
	return done
}

// waitersOn waits until n waits hold the informer of kind in namespace:
// they have registered their interest.
func waitersOn(t *testing.T, c *Cluster, kind hubKind, namespace string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return c.informers().users(hubKey{kind, namespace}) == n }, time.Minute, 10*time.Millisecond,
		"%d waits registered on %s in %s", n, kind, namespace)
}

func TestConcurrentWorkloadWaitsShareOneWatch(t *testing.T) {
	ns := hubNamespace(t, "hub-share")
	log := &requestLog{}
	c := hubCluster(t, log, 200*time.Millisecond)
	first, _ := hubJob(t, ns, "first")
	second, _ := hubJob(t, ns, "second")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	firstDone, secondDone := goWait(ctx, c, first), goWait(ctx, c, second)
	waitersOn(t, c, hubJobs, ns, 2)
	waitersOn(t, c, hubPods, ns, 2)

	// Only the Job that completes ends its wait.
	unsuspend(t, first)
	got := <-firstDone
	require.NoError(t, got.err)
	require.Equal(t, PhaseComplete, got.status.Phase)
	require.Equal(t, []string{ns + "-gpu"}, got.status.NodeNames)
	select {
	case r := <-secondDone:
		t.Fatalf("the second wait ended with the first Job: %+v, %v", r.status, r.err)
	default:
	}
	require.Equal(t, 1, c.informers().users(hubKey{hubJobs, ns}), "the second wait still holds the Jobs' informer")

	unsuspend(t, second)
	got = <-secondDone
	require.NoError(t, got.err)
	require.Equal(t, PhaseComplete, got.status.Phase)

	jobs, pods := "/apis/batch/v1/namespaces/"+ns+"/jobs", "/api/v1/namespaces/"+ns+"/pods"
	require.Equal(t, 1, log.count("WATCH "+jobs), "one watch of Jobs for both waits:\n%s", log)
	require.Equal(t, 1, log.count("LIST "+jobs), "one list of Jobs for both waits:\n%s", log)
	require.Equal(t, 1, log.count("WATCH "+pods), "one watch of pods for both waits:\n%s", log)
	require.Equal(t, 1, log.count("LIST "+pods), "one list of pods for both waits:\n%s", log)
	t.Logf("requests for two waits:\n%s", log)

	// Idle, the informers stop after their linger; a later wait starts
	// them again.
	require.Eventually(t, func() bool { running, _ := c.informers().stats(); return running == 0 }, time.Minute, 10*time.Millisecond)
	third, _ := hubJob(t, ns, "third")
	unsuspend(t, third)
	status, err := c.WaitForWorkload(ctx, third)
	require.NoError(t, err)
	require.Equal(t, PhaseComplete, status.Phase)
	require.Equal(t, 2, log.count("WATCH "+jobs), "a new watch after the idle stop:\n%s", log)
}

func TestWorkloadWaitFollowsTheJobItCreatedNotItsName(t *testing.T) {
	ns := hubNamespace(t, "hub-uid")
	c := hubCluster(t, &requestLog{}, 200*time.Millisecond)
	spec, oldUID := hubJob(t, ns, "same")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	oldDone := goWait(ctx, c, spec)
	waitersOn(t, c, hubJobs, ns, 1)

	// The Job is replaced by another of the same name, which completes:
	// the wait for the first one ends on the first one's deletion.
	jobs := cluster.Client().BatchV1().Jobs(ns)
	background := metav1.DeletePropagationBackground
	require.NoError(t, jobs.Delete(ctx, "same", metav1.DeleteOptions{PropagationPolicy: &background}))
	got := <-oldDone
	require.ErrorContains(t, got.err, "the Job was deleted while waiting for it to complete")

	// Its replacement (while the cache may still hold the first one) is
	// waited for until it, not the first, completes.
	require.Eventually(t, func() bool {
		_, err := jobs.Get(ctx, "same", metav1.GetOptions{})
		return err != nil
	}, time.Minute, 20*time.Millisecond)
	_, newUID := hubJob(t, ns, "same")
	require.NotEqual(t, oldUID, newUID)
	newDone := goWait(ctx, c, spec)
	waitersOn(t, c, hubJobs, ns, 1)
	select {
	case r := <-newDone:
		t.Fatalf("the wait for the suspended replacement ended: %+v, %v", r.status, r.err)
	default:
	}
	unsuspend(t, spec)
	got = <-newDone
	require.NoError(t, got.err)
	require.Equal(t, PhaseComplete, got.status.Phase)
	live, err := jobs.Get(ctx, "same", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, newUID, live.UID)
}

func TestWorkloadWaitOutlivesAClosedWatch(t *testing.T) {
	ns := hubNamespace(t, "hub-rewatch")
	jobs := "/apis/batch/v1/namespaces/" + ns + "/jobs"
	log := &requestLog{cutPath: jobs}
	c := hubCluster(t, log, 200*time.Millisecond)
	spec, _ := hubJob(t, ns, "train")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	done := goWait(ctx, c, spec)
	waitersOn(t, c, hubJobs, ns, 1)
	require.Eventually(t, log.cutWatch, time.Minute, 10*time.Millisecond, "the Jobs' watch was opened")

	// The reflector watches again (from its last resourceVersion, or after
	// a relist), and the completion made after the cut reaches the wait.
	require.Eventually(t, func() bool { return log.count("WATCH "+jobs) >= 2 }, 2*time.Minute, 10*time.Millisecond,
		"the closed watch is re-established:\n%s", log)
	unsuspend(t, spec)
	got := <-done
	require.NoError(t, got.err)
	require.Equal(t, PhaseComplete, got.status.Phase)
	t.Logf("requests:\n%s", log)
}

func TestRefreshWorkloadsShareOneList(t *testing.T) {
	ns := hubNamespace(t, "hub-refresh")
	log := &requestLog{}
	c := hubCluster(t, log, 200*time.Millisecond)
	const n = 12
	for i := range n {
		hubJob(t, ns, fmt.Sprintf("job-%d", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type read struct {
		live  WorkloadLive
		found bool
		err   error
	}
	reads := make(chan read, n+1)
	for i := range n + 1 { // and one that does not exist
		go func() {
			live, found, err := c.RefreshWorkload(ctx, WorkloadRef{Kind: WorkloadJob, Namespace: ns, Name: fmt.Sprintf("job-%d", i)})
			reads <- read{live, found, err}
		}()
	}
	present := 0
	for range n + 1 {
		r := <-reads
		require.NoError(t, r.err)
		if r.found {
			present++
			require.Equal(t, PhaseSuspended, r.live.Status.Phase)
		}
	}
	require.Equal(t, n, present, "every Job read, the missing one absent")
	lists := log.count("LIST /apis/batch/v1/namespaces/" + ns + "/jobs")
	require.GreaterOrEqual(t, lists, 1)
	require.Less(t, lists, n, "reads share lists:\n%s", log)
	require.Zero(t, log.count("GET /apis/batch/v1/namespaces/"+ns+"/jobs/job-0"), "no GET per workload:\n%s", log)

	// A read that begins after a write sees it: a Job deleted before the
	// read is gone, one created before it is there.
	jobs := cluster.Client().BatchV1().Jobs(ns)
	background := metav1.DeletePropagationBackground // the Job goes at once, its pods after
	require.NoError(t, jobs.Delete(ctx, "job-0", metav1.DeleteOptions{PropagationPolicy: &background}))
	_, found, err := c.RefreshWorkload(ctx, WorkloadRef{Kind: WorkloadJob, Namespace: ns, Name: "job-0"})
	require.NoError(t, err)
	require.False(t, found, "a Job deleted before the read began is gone")
	hubJob(t, ns, "late")
	_, found, err = c.RefreshWorkload(ctx, WorkloadRef{Kind: WorkloadJob, Namespace: ns, Name: "late"})
	require.NoError(t, err)
	require.True(t, found, "a Job created before the read began is in its list")
}

// A Job created and deleted while no informer watched (before the Jobs
// informer's first list, or during an outage) never reaches the cache, and
// no event says it is gone: the wait asks the API server, and ends.
func TestWorkloadWaitEndsForAJobDeletedBeforeTheInformerListed(t *testing.T) {
	ns := hubNamespace(t, "hub-unseen")
	c := hubCluster(t, &requestLog{}, 200*time.Millisecond)
	spec, uid := hubJob(t, ns, "gone")
	jobs := cluster.Client().BatchV1().Jobs(ns)
	background := metav1.DeletePropagationBackground
	require.NoError(t, jobs.Delete(context.Background(), spec.Name, metav1.DeleteOptions{PropagationPolicy: &background}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.Eventually(t, func() bool {
		_, err := jobs.Get(ctx, spec.Name, metav1.GetOptions{})
		return err != nil
	}, time.Minute, 20*time.Millisecond)

	informer, release := c.informers().acquire(hubKey{hubJobs, ns})
	defer release()
	_, deleted, err := awaitObject(ctx, informer, watchedObject{ns, spec.Name, uid},
		stillThere(jobs.Get, spec.Name, uid), func(*batchv1.Job) (bool, error) { return false, nil })
	require.NoError(t, err)
	require.True(t, deleted, "a Job the cache never held and the API server no longer has ends the wait as deleted")
}

// A Job the synced cache lacks but the API server has is not gone: the
// wait goes on, and ends on the Job's own event.
func TestWorkloadWaitKeepsWaitingForAJobTheCacheHasNotSeen(t *testing.T) {
	ns := hubNamespace(t, "hub-lag")
	c := hubCluster(t, &requestLog{}, 200*time.Millisecond)
	spec, uid := hubJob(t, ns, "there")
	jobs := cluster.Client().BatchV1().Jobs(ns)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	informer, release := c.informers().acquire(hubKey{hubJobs, ns})
	defer release()
	// A cache that never shows the Job: the informer's events are matched
	// against another UID than the one the API server has under the name.
	lagging := watchedObject{ns, spec.Name, uid + "-not-yet"}
	waitCtx, stop := context.WithTimeout(ctx, 3*time.Second)
	defer stop()
	_, deleted, err := awaitObject(waitCtx, informer, lagging,
		stillThere(func(ctx context.Context, name string, o metav1.GetOptions) (*batchv1.Job, error) {
			j, err := jobs.Get(ctx, name, o)
			if j != nil {
				j.UID = lagging.uid
			}
			return j, err
		}, spec.Name, lagging.uid),
		func(*batchv1.Job) (bool, error) { return true, nil })
	require.False(t, deleted, "an object the API server still has is not deleted")
	require.ErrorIs(t, err, context.DeadlineExceeded, "the wait goes on while the object exists")
}
