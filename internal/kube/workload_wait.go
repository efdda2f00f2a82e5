package kube

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
func WaitForWorkload(ctx context.Context, c *Cluster, spec WorkloadSpec) (*WorkloadStatus, error) {
	var lastJob *batchv1.Job
	var err error
	switch {
	case spec.Kind == WorkloadJob && !spec.Job.Suspend:
		err = c.runWait(ctx, "job_completion", spec.ID(), func(ctx context.Context) error {
			var err error
			lastJob, err = waitJobComplete(ctx, c, spec)
			return err
		})
	case spec.Kind == WorkloadDeployment:
		err = c.runWait(ctx, "deployment_rollout", spec.ID(), func(ctx context.Context) error {
			return waitDeploymentRolledOut(ctx, c, spec)
		})
	}
	status, statusErr := readWorkloadStatus(ctx, c, spec, lastJob)
	return status, errors.Join(err, statusErr)
}

// waitJobComplete watches the Job until it is Complete or Failed, and
// returns the last version it saw.
func waitJobComplete(ctx context.Context, c *Cluster, spec WorkloadSpec) (*batchv1.Job, error) {
	jobs := c.client.BatchV1().Jobs(spec.Namespace)
	// The Job's own selector (its controller UID) picks its pods, never
	// those of an earlier Job of the same name.
	job, err := jobs.Get(ctx, spec.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Job %s: %w", spec.ID(), err)
	}
	selector := jobPodSelector(job)
	lw := ListWatchFunctions[*batchv1.JobList]{List: jobs.List, Watch: jobs.Watch}
	last := job
	err = watchingScheduling(ctx, c, spec, selector, func(ctx context.Context) error {
		seen, err := WaitForObject(ctx, lw, spec.Name, func(j *batchv1.Job, exists bool) (bool, error) {
			if !exists {
				return false, errors.New("the Job was deleted while waiting for it to complete")
			}
			_, complete := jobCondition(j, batchv1.JobComplete)
			_, failed := jobCondition(j, batchv1.JobFailed)
			return complete || failed, nil
		})
		if seen != nil {
			last = seen
		}
		return err
	})
	if err == nil {
		if _, failed := jobCondition(last, batchv1.JobFailed); failed {
			err = errors.New(describeJobFailure(ctx, c, last))
		}
	}
	if isDeadline(err) {
		err = fmt.Errorf("the Job did not complete in time: %s", describeWaitingPods(ctx, c, spec, selector))
	}
	return last, err
}

// waitDeploymentRolledOut watches the Deployment until every replica runs
// the current template and is available.
func waitDeploymentRolledOut(ctx context.Context, c *Cluster, spec WorkloadSpec) error {
	deps := c.client.AppsV1().Deployments(spec.Namespace)
	// Only the generation the update made, or a later one, counts: an
	// older copy of the object says nothing about this rollout.
	current, err := deps.Get(ctx, spec.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading Deployment %s: %w", spec.ID(), err)
	}
	lw := ListWatchFunctions[*appsv1.DeploymentList]{List: deps.List, Watch: deps.Watch}
	selector := deploymentPodSelector(spec.Name)
	var last *appsv1.Deployment
	err = watchingScheduling(ctx, c, spec, selector, func(ctx context.Context) error {
		var err error
		last, err = WaitForObject(ctx, lw, spec.Name, func(d *appsv1.Deployment, exists bool) (bool, error) {
			if !exists {
				return false, errors.New("the Deployment was deleted while waiting for its rollout")
			}
			if deploymentProgressDeadlineExceeded(d) {
				return false, fmt.Errorf("the rollout passed its progress deadline: %s", describeWaitingPods(ctx, c, spec, selector))
			}
			return d.Generation >= current.Generation && deploymentRolledOut(d), nil
		})
		return err
	})
	if isDeadline(err) {
		err = fmt.Errorf("the rollout did not finish in time: %s%s", describeWaitingPods(ctx, c, spec, selector), rollingUpdateHint(last))
	}
	return err
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

// watchingScheduling runs wait while watching the workload's pods. When the
// scheduler marks a pod Unschedulable and the node facts say no node could
// ever take it, or that a Deployment has more replicas than the nodes can
// ever hold at once, wait's context is canceled and the diagnosis
// returned; a pod that waits for GPUs other pods will free, for nodes to
// come back or for a starting device plugin keeps the wait going. A Job
// with more parallelism than the nodes hold runs in waves, and waits.
func watchingScheduling(ctx context.Context, c *Cluster, spec WorkloadSpec, podSelector string, wait func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req := spec.GPURequest()
	go func() {
		_, err := WaitForPod(ctx, c.client, spec.Namespace, podSelector, func(pod *corev1.Pod) (bool, error) {
			if unschedulable, _ := PodUnschedulable(pod); !unschedulable || pod.DeletionTimestamp != nil {
				return false, nil
			}
			// Nodes that could not be read keep the wait going: its own
			// diagnosis reports what it can.
			nodes, err := ListNodeFacts(ctx, c.client, req.Resource)
			if err != nil {
				return false, nil //nolint:nilerr // see above
			}
			d := Diagnose(nodes, req)
			if !d.CouldEverFit() {
				cancel(&UnschedulableError{Message: describeUnschedulable(ctx, c, pod, d)})
				return true, nil
			}
			// A Deployment's pods never finish: GPUs its own replicas hold
			// are never freed for the replicas past what the nodes hold.
			if spec.Kind == WorkloadDeployment {
				capacity := CapacityFor(nodes, req)
				if beyond := ReplicasBeyondCapacity(capacity, req, deploymentReplicas(spec)); beyond != "" {
					cancel(&UnschedulableError{Message: describeReplicasBeyondCapacity(ctx, c, pod, d, beyond, capacity.Pods)})
					return true, nil
				}
			}
			return false, nil
		})
		_ = err // ends with ctx: the wait finished, or timed out and explains itself
	}()
	err := wait(ctx)
	var unschedulable *UnschedulableError
	if errors.As(context.Cause(ctx), &unschedulable) {
		return unschedulable
	}
	return err
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
