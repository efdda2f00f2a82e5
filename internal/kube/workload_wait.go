package kube

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// UnschedulableError ends a wait early: a pod cannot be scheduled and no
// node could ever take it, so waiting longer cannot help.
type UnschedulableError struct{ Message string }

func (e *UnschedulableError) Error() string { return e.Message }

// WaitForWorkload waits until the Job of spec completes, or the Deployment
// of spec has rolled out (every replica runs the current template and is
// available). A failed Job, a rollout past its progress deadline, a pod no
// node can ever take, an API server unreachable for longer than the
// Cluster's limit, or the end of ctx is an error that says why. A
// suspended Job is not waited for.
//
// It returns the workload's status at the end, read with a deadline of its
// own (ctx's may be spent), or nil when it could not be read; the error
// then says so too. A Job that Kubernetes deleted right after it finished
// (ttl_seconds_after_finished = 0) is described as the wait last saw it.
func (c *Cluster) WaitForWorkload(ctx context.Context, spec WorkloadSpec) (*WorkloadStatus, error) {
	var (
		lastJob *batchv1.Job
		lastDep *appsv1.Deployment
		err     error
	)
	switch {
	case spec.Kind == WorkloadJob && !spec.Job.Suspend:
		err = c.runWait(ctx, "job_completion", spec.ID(), func(ctx context.Context) error {
			var err error
			lastJob, err = c.waitJobComplete(ctx, spec)
			return err
		})
	case spec.Kind == WorkloadDeployment:
		err = c.runWait(ctx, "deployment_rollout", spec.ID(), func(ctx context.Context) error {
			var err error
			lastDep, err = c.waitDeploymentRolledOut(ctx, spec)
			return err
		})
	}
	if err == nil {
		if status, ok := c.cachedWorkloadStatus(lastJob, lastDep); ok {
			return status, nil
		}
	}
	status, statusErr := c.readWorkloadStatus(ctx, spec, lastJob)
	return status, errors.Join(err, statusErr)
}

// waitJobComplete follows the Job on the hub's shared informer of Jobs in
// its namespace until it is Complete or Failed, and returns the last
// version it saw.
func (c *Cluster) waitJobComplete(ctx context.Context, spec WorkloadSpec) (*batchv1.Job, error) {
	// The Job this apply created or updated, read consistently: its UID
	// tells its versions in the cache from those of an earlier Job of the
	// same name, and its own selector (its controller UID) picks its pods.
	job, err := c.client.BatchV1().Jobs(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Job %s: %w", spec.ID(), err)
	}
	selector := jobPodSelector(job)
	finished := func(j *batchv1.Job) bool {
		_, complete := jobCondition(j, batchv1.JobComplete)
		_, failed := jobCondition(j, batchv1.JobFailed)
		return complete || failed
	}
	last := job
	if !finished(job) {
		jobs, release := c.informers().acquire(hubKey{hubJobs, spec.Namespace})
		defer release()
		err = c.watchingScheduling(ctx, spec, selector, func(ctx context.Context) error {
			seen, deleted, err := awaitObject(ctx, jobs, watchedObject{spec.Namespace, spec.Name, job.UID}, stillThere(c.client.BatchV1().Jobs(spec.Namespace).Get, spec.Name, job.UID), func(j *batchv1.Job) (bool, error) {
				return finished(j), nil
			})
			if seen != nil {
				last = seen
			}
			if deleted {
				return errors.New("the Job was deleted while waiting for it to complete")
			}
			return err
		})
	}
	if err == nil {
		if _, failed := jobCondition(last, batchv1.JobFailed); failed {
			err = errors.New(c.describeJobFailure(ctx, last))
		}
	}
	if isDeadline(err) {
		err = fmt.Errorf("the Job did not complete in time: %s", c.describeWaitingPods(ctx, spec, selector))
	}
	return last, err
}

// waitDeploymentRolledOut follows the Deployment on the hub's shared
// informer until every replica runs the current template and is
// available, and returns the last version it saw.
func (c *Cluster) waitDeploymentRolledOut(ctx context.Context, spec WorkloadSpec) (*appsv1.Deployment, error) {
	// Only the generation the update made, or a later one, counts: an
	// older copy of the object (a cache behind the update) says nothing
	// about this rollout.
	current, err := c.client.AppsV1().Deployments(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Deployment %s: %w", spec.ID(), err)
	}
	selector := deploymentPodSelector(spec.Name)
	deps, release := c.informers().acquire(hubKey{hubDeployments, spec.Namespace})
	defer release()
	var last *appsv1.Deployment
	err = c.watchingScheduling(ctx, spec, selector, func(ctx context.Context) error {
		seen, deleted, err := awaitObject(ctx, deps, watchedObject{spec.Namespace, spec.Name, current.UID}, stillThere(c.client.AppsV1().Deployments(spec.Namespace).Get, spec.Name, current.UID), func(d *appsv1.Deployment) (bool, error) {
			if d.Generation < current.Generation {
				return false, nil
			}
			if deploymentProgressDeadlineExceeded(d) {
				return false, fmt.Errorf("the rollout passed its progress deadline: %s", c.describeWaitingPods(ctx, spec, selector))
			}
			return deploymentRolledOut(d), nil
		})
		last = seen
		if deleted {
			return errors.New("the Deployment was deleted while waiting for its rollout")
		}
		return err
	})
	if isDeadline(err) {
		err = fmt.Errorf("the rollout did not finish in time: %s%s", c.describeWaitingPods(ctx, spec, selector), rollingUpdateHint(last))
	}
	return last, err
}

// rollingUpdateHint explains the classic GPU rollout deadlock: a
// RollingUpdate keeps old pods, and their GPUs, until new pods are
// available, and the new pods wait for GPUs.
func rollingUpdateHint(dep *appsv1.Deployment) string {
	if dep == nil || dep.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || dep.Status.Replicas <= dep.Status.UpdatedReplicas {
		return ""
	}
	return fmt.Sprintf(" %d pods of the previous revision still run and hold their GPUs until new pods are available; "+
		"when the cluster has no spare GPUs for the new ones the rollout cannot proceed. Set deployment.strategy = \"Recreate\" "+
		"to stop the old pods first, or free GPUs.", dep.Status.Replicas-dep.Status.UpdatedReplicas)
}

// watchingScheduling runs wait while following the workload's pods on the
// hub's shared pod informer of its namespace. When the
// scheduler marks a pod Unschedulable and the node facts say no node could
// ever take it, or that a Deployment has more replicas than the nodes can
// ever hold at once, wait's context is canceled and the diagnosis
// returned; a pod that waits for GPUs other pods will free, for nodes to
// come back or for a starting device plugin keeps the wait going. A Job
// with more parallelism than the nodes hold runs in waves, and waits.
func (c *Cluster) watchingScheduling(ctx context.Context, spec WorkloadSpec, podSelector string, wait func(context.Context) error) error {
	selector, err := labels.Parse(podSelector)
	if err != nil {
		return fmt.Errorf("the pod selector %q of %s: %w", podSelector, spec.ID(), err)
	}
	hub := c.informers()
	pods, releasePods := hub.acquire(hubKey{hubPods, spec.Namespace})
	defer releasePods()
	sub, err := subscribe(pods, func(o runtime.Object) bool {
		pod, ok := o.(*corev1.Pod)
		return ok && selector.Matches(labels.Set(pod.Labels))
	})
	if err != nil {
		return err
	}
	defer sub.close()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The informers of every node and bound pod start with the first
	// unschedulable pod, and are held until the wait ends.
	var releaseNodes []func()
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		req := spec.GPURequest()
		for {
			events, err := sub.next(ctx, nil)
			if err != nil {
				return // the wait finished, or timed out and explains itself
			}
			for _, ev := range events {
				pod, _ := ev.obj.(*corev1.Pod)
				if ev.deleted || pod == nil || pod.DeletionTimestamp != nil {
					continue
				}
				if unschedulable, _ := PodUnschedulable(pod); !unschedulable {
					continue
				}
				if releaseNodes == nil {
					_, releaseNodeInformer := hub.acquire(hubKey{kind: hubNodes})
					_, releaseBound := hub.acquire(hubKey{kind: hubBoundPods})
					releaseNodes = []func(){releaseNodeInformer, releaseBound}
				}
				if diagnosis := c.unschedulableForGood(ctx, spec, req, pod); diagnosis != nil {
					cancel(diagnosis)
					return
				}
			}
		}
	}()
	err = wait(ctx)
	var unschedulable *UnschedulableError
	if errors.As(context.Cause(ctx), &unschedulable) {
		err = unschedulable
	}
	cancel(nil)
	<-watched
	for _, release := range releaseNodes {
		release()
	}
	return err
}

// unschedulableForGood is the diagnosis of an unschedulable pod that no
// node could ever take, or of a Deployment with more replicas than the
// nodes can ever hold at once; nil while waiting can still help (nodes
// that could not be read keep the wait going: its own diagnosis reports
// what it can).
func (c *Cluster) unschedulableForGood(ctx context.Context, spec WorkloadSpec, req GPURequest, pod *corev1.Pod) *UnschedulableError {
	if spec.Pod.GPU.DRA() {
		d, _, err := c.diagnoseDRA(ctx, spec)
		if err != nil || d.CouldEverFit() {
			return nil //nolint:nilerr // as below
		}
		return &UnschedulableError{Message: c.describeUnschedulable(ctx, pod, d)}
	}
	nodes, err := c.nodeFacts(ctx, req.Resource)
	if err != nil {
		return nil //nolint:nilerr // see above
	}
	d := Diagnose(nodes, req)
	if !d.CouldEverFit() {
		return &UnschedulableError{Message: c.describeUnschedulable(ctx, pod, d)}
	}
	// A Deployment's pods never finish: GPUs its own replicas hold are
	// never freed for the replicas past what the nodes hold.
	if spec.Kind == WorkloadDeployment {
		capacity := CapacityFor(nodes, req)
		if beyond := ReplicasBeyondCapacity(capacity, req, deploymentReplicas(spec)); beyond != "" {
			return &UnschedulableError{Message: c.describeReplicasBeyondCapacity(ctx, pod, d, beyond, capacity.Pods)}
		}
	}
	return nil
}

// deploymentReplicas is how many replicas spec asks for, Kubernetes'
// default of 1 when unset.
func deploymentReplicas(spec WorkloadSpec) int64 {
	if spec.Deployment.Replicas == nil {
		return 1
	}
	return int64(*spec.Deployment.Replicas)
}

func isDeadline(err error) bool { return errors.Is(err, context.DeadlineExceeded) }
