package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
)

// diagnosisTimeout bounds the reads that explain a failed wait, which run
// after the wait's own deadline has passed.
const diagnosisTimeout = 30 * time.Second

// unschedulableError ends a wait early: a pod cannot be scheduled and no
// node could ever take it, so waiting longer cannot help.
type unschedulableError struct{ message string }

func (e *unschedulableError) Error() string { return e.message }

// waitJobComplete watches the Job until it is Complete. A Failed Job, a pod
// no node can ever take, or the end of ctx is an error that says why.
func waitJobComplete(ctx context.Context, client kubernetes.Interface, job *batchv1.Job, req kube.GPURequest) (*batchv1.Job, error) {
	jobs := client.BatchV1().Jobs(job.Namespace)
	lw := kube.ListWatchFunctions[*batchv1.JobList]{List: jobs.List, Watch: jobs.Watch}
	selector := jobPodSelector(job)
	var last *batchv1.Job
	waited := startClusterWait(ctx, "job_completion", job.Namespace+"/"+job.Name)
	err := watchingScheduling(ctx, client, job.Namespace, selector, req, func(ctx context.Context) error {
		var err error
		last, err = kube.WaitForObject(ctx, lw, job.Name, func(j *batchv1.Job, exists bool) (bool, error) {
			if !exists {
				return false, errors.New("the Job was deleted while waiting for it to complete")
			}
			_, complete := jobCondition(j, batchv1.JobComplete)
			_, failed := jobCondition(j, batchv1.JobFailed)
			return complete || failed, nil
		})
		return err
	})
	waited(err)
	if err == nil && last != nil {
		if _, failed := jobCondition(last, batchv1.JobFailed); failed {
			err = errors.New(describeJobFailure(ctx, client, last))
		}
	}
	if isDeadline(err) {
		err = fmt.Errorf("the Job did not complete in time: %s", describeWaitingPods(ctx, client, job.Namespace, selector, req))
	}
	return last, err
}

// waitDeploymentRolledOut watches the Deployment until every replica runs
// the current template and is available.
func waitDeploymentRolledOut(ctx context.Context, client kubernetes.Interface, dep *appsv1.Deployment, req kube.GPURequest) (*appsv1.Deployment, error) {
	deps := client.AppsV1().Deployments(dep.Namespace)
	lw := kube.ListWatchFunctions[*appsv1.DeploymentList]{List: deps.List, Watch: deps.Watch}
	selector := deploymentPodSelector(dep.Name)
	var last *appsv1.Deployment
	waited := startClusterWait(ctx, "deployment_rollout", dep.Namespace+"/"+dep.Name)
	err := watchingScheduling(ctx, client, dep.Namespace, selector, req, func(ctx context.Context) error {
		var err error
		last, err = kube.WaitForObject(ctx, lw, dep.Name, func(d *appsv1.Deployment, exists bool) (bool, error) {
			if !exists {
				return false, errors.New("the Deployment was deleted while waiting for its rollout")
			}
			if deploymentProgressDeadlineExceeded(d) {
				return false, fmt.Errorf("the rollout passed its progress deadline: %s", describeWaitingPods(ctx, client, d.Namespace, selector, req))
			}
			// Only this update's generation or a later one counts: an
			// older copy of the object says nothing about this rollout.
			return d.Generation >= dep.Generation && deploymentRolledOut(d), nil
		})
		return err
	})
	waited(err)
	if isDeadline(err) {
		err = fmt.Errorf("the rollout did not finish in time: %s%s", describeWaitingPods(ctx, client, dep.Namespace, selector, req), rollingUpdateHint(last))
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

// waitGone watches until the object called name no longer exists.
func waitGone[T runtime.Object, L runtime.Object](ctx context.Context, lw kube.ListWatchFunctions[L], id, name string) error {
	waited := startClusterWait(ctx, "workload_deletion", id)
	_, err := kube.WaitForObject(ctx, lw, name, func(_ T, exists bool) (bool, error) { return !exists, nil })
	waited(err)
	return err
}

// watchingScheduling runs wait while watching the workload's pods. When the
// scheduler marks a pod Unschedulable and the node facts say no node could
// ever take it, wait's context is canceled and the diagnosis returned; a
// pod that waits for busy GPUs keeps the wait going.
func watchingScheduling(ctx context.Context, client kubernetes.Interface, namespace, podSelector string, req kube.GPURequest, wait func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		_, err := kube.WaitForPod(ctx, client, namespace, podSelector, func(pod *corev1.Pod) (bool, error) {
			if unschedulable, _ := kube.PodUnschedulable(pod); !unschedulable || pod.DeletionTimestamp != nil {
				return false, nil
			}
			// Nodes that could not be read keep the wait going: its own
			// diagnosis reports what it can.
			nodes, err := kube.ListNodeFacts(ctx, client, req.Resource)
			if d := kube.Diagnose(nodes, req); err == nil && !d.CouldEverFit() {
				cancel(&unschedulableError{message: describeUnschedulable(ctx, client, pod, d)})
				return true, nil
			}
			return false, nil
		})
		_ = err // ends with ctx: the wait finished, or timed out and explains itself
	}()
	err := wait(ctx)
	var unschedulable *unschedulableError
	if errors.As(context.Cause(ctx), &unschedulable) {
		return unschedulable
	}
	return err
}

func isDeadline(err error) bool { return errors.Is(err, context.DeadlineExceeded) }
