package kube

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// refreshLists answers the reads of a refresh (terraform plan reading every
// gpu_workload in state) from shared LISTs: one LIST of a namespace's Jobs
// (or Deployments) and one of its pods serve every read waiting for them,
// instead of a GET and a pod LIST each.
//
// Correctness: a read is answered only by LISTs sent after it began (group
// commit). Reads join the batch that has not been sent yet; while a batch's
// LISTs are in flight, new reads gather in the next one, sent when those
// return. A LIST without a resourceVersion is a consistent read ("Most
// recent": https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions),
// so each answer is at least as fresh as a GET made when the read began: a
// workload missing from the list is gone, never "not seen yet", and an
// update this provider made before the read is in it.
type refreshLists struct {
	client kubernetes.Interface

	mu       sync.Mutex
	pending  map[refreshKey]*refreshBatch
	inFlight map[refreshKey]bool
}

type refreshKey struct {
	kind      WorkloadKind
	namespace string
}

// refreshBatch is one LIST of a namespace's workloads and pods, and the
// reads waiting for it.
type refreshBatch struct {
	done chan struct{}
	jobs map[string]*batchv1.Job
	deps map[string]*appsv1.Deployment
	pods []corev1.Pod
	err  error
}

func (c *Cluster) refreshes() *refreshLists {
	c.refreshOnce.Do(func() {
		c.refresh = &refreshLists{client: c.client, pending: map[refreshKey]*refreshBatch{}, inFlight: map[refreshKey]bool{}}
	})
	return c.refresh
}

// RefreshWorkload is ReadWorkload for a refresh: the same answer, read from
// LISTs shared with the other reads of ref's namespace (refreshLists).
func (c *Cluster) RefreshWorkload(ctx context.Context, ref WorkloadRef) (WorkloadLive, bool, error) {
	done := logCall(ctx, "reading workload (shared list)", ref.ID())
	p, err := c.refreshes().read(ctx, ref)
	if err == nil {
		err = c.withClaimTemplate(ctx, p)
	}
	done(err)
	return found(p, err)
}

func (r *refreshLists) read(ctx context.Context, ref WorkloadRef) (*WorkloadLive, error) {
	if ref.Kind != WorkloadJob && ref.Kind != WorkloadDeployment {
		return nil, fmt.Errorf("unknown workload kind %q", ref.Kind)
	}
	b := r.join(refreshKey{ref.Kind, ref.Namespace})
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("reading %s: %w", ref.ID(), ctx.Err())
	case <-b.done:
	}
	if b.err != nil {
		return nil, b.err
	}
	if ref.Kind == WorkloadJob {
		job := b.jobs[ref.Name]
		if job == nil {
			return nil, nil
		}
		pods, err := podsMatching(b.pods, jobPodSelector(job))
		if err != nil {
			return nil, err
		}
		return &WorkloadLive{Spec: JobWorkloadSpec(job, ref.Container), Status: jobStatus(job, pods)}, nil
	}
	dep := b.deps[ref.Name]
	if dep == nil {
		return nil, nil
	}
	pods, err := podsMatching(b.pods, deploymentPodSelector(dep.Name))
	if err != nil {
		return nil, err
	}
	return &WorkloadLive{Spec: DeploymentWorkloadSpec(dep, ref.Container), Status: deploymentStatus(dep, pods)}, nil
}

// join returns the batch of key not yet sent, making one (and sending it
// now, when no LIST of key is in flight) if there is none.
func (r *refreshLists) join(key refreshKey) *refreshBatch {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := r.pending[key]; b != nil {
		return b
	}
	b := &refreshBatch{done: make(chan struct{})}
	r.pending[key] = b
	if !r.inFlight[key] {
		r.sendLocked(key)
	}
	return b
}

// sendLocked sends key's pending batch; when its LISTs return, the batch
// that gathered meanwhile goes next. r.mu is held.
func (r *refreshLists) sendLocked(key refreshKey) {
	b := r.pending[key]
	delete(r.pending, key)
	r.inFlight[key] = true
	go func() {
		// Not any one read's context: the batch serves them all.
		ctx, cancel := diagnosisContext(context.Background())
		defer cancel()
		b.list(ctx, r.client, key)
		close(b.done)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.inFlight[key] = false
		if r.pending[key] != nil {
			r.sendLocked(key)
		}
	}()
}

// list reads key's workloads and the pods of its namespace, consistently.
func (b *refreshBatch) list(ctx context.Context, client kubernetes.Interface, key refreshKey) {
	ns := key.namespace
	err := listPages(ctx, DefaultPageSize, func(ctx context.Context, lo metav1.ListOptions) (string, error) {
		if key.kind == WorkloadJob {
			list, err := client.BatchV1().Jobs(ns).List(ctx, lo)
			if err != nil {
				return "", fmt.Errorf("listing the Jobs of %s: %w", ns, err)
			}
			if b.jobs == nil {
				b.jobs = map[string]*batchv1.Job{}
			}
			for i := range list.Items {
				b.jobs[list.Items[i].Name] = &list.Items[i]
			}
			return list.Continue, nil
		}
		list, err := client.AppsV1().Deployments(ns).List(ctx, lo)
		if err != nil {
			return "", fmt.Errorf("listing the Deployments of %s: %w", ns, err)
		}
		if b.deps == nil {
			b.deps = map[string]*appsv1.Deployment{}
		}
		for i := range list.Items {
			b.deps[list.Items[i].Name] = &list.Items[i]
		}
		return list.Continue, nil
	})
	if err == nil {
		b.pods, err = listPods(ctx, client, ns, "")
	}
	b.err = err
}

// podsMatching are the pods selector matches, in pods' order.
func podsMatching(pods []corev1.Pod, selector string) ([]corev1.Pod, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("the pod selector %q: %w", selector, err)
	}
	var out []corev1.Pod
	for i := range pods {
		if sel.Matches(labels.Set(pods[i].Labels)) {
			out = append(out, pods[i])
		}
	}
	return out, nil
}
