package kube

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadRef names a workload on the cluster.
type WorkloadRef struct {
	Kind      WorkloadKind
	Namespace string
	Name      string
	// Container is the container to read back when the pod has several
	// (someone added one out of band); the first when none has this name.
	Container string
	// DRA says the workload owns a ResourceClaimTemplate of its name.
	DRA bool
}

// ID is namespace/name, the resource's Terraform ID.
func (r WorkloadRef) ID() string { return r.Namespace + "/" + r.Name }

// WorkloadLive is a workload as the cluster has it.
type WorkloadLive struct {
	Spec   WorkloadSpec
	Status WorkloadStatus
}

// ReadWorkload reads the workload ref names and its pods; found is false
// when it does not exist.
func (c *Cluster) ReadWorkload(ctx context.Context, ref WorkloadRef) (WorkloadLive, bool, error) {
	done := logCall(ctx, "reading workload", ref.ID())
	p, err := c.readWorkload(ctx, ref)
	if err == nil {
		err = c.withClaimTemplate(ctx, p)
	}
	done(err)
	return found(p, err)
}

func (c *Cluster) readWorkload(ctx context.Context, ref WorkloadRef) (*WorkloadLive, error) {
	switch ref.Kind {
	case WorkloadJob:
		job, err := c.client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading Job %s: %w", ref.ID(), err)
		}
		pods, err := listPods(ctx, c.client, job.Namespace, jobPodSelector(job))
		if err != nil {
			return nil, err
		}
		return &WorkloadLive{Spec: JobWorkloadSpec(job, ref.Container), Status: jobStatus(job, pods)}, nil
	case WorkloadDeployment:
		dep, err := c.client.AppsV1().Deployments(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading Deployment %s: %w", ref.ID(), err)
		}
		pods, err := listPods(ctx, c.client, dep.Namespace, deploymentPodSelector(dep.Name))
		if err != nil {
			return nil, err
		}
		return &WorkloadLive{Spec: DeploymentWorkloadSpec(dep, ref.Container), Status: deploymentStatus(dep, pods)}, nil
	}
	return nil, fmt.Errorf("unknown workload kind %q", ref.Kind)
}

// readWorkloadStatus reads the status of spec's workload with a deadline
// of its own: the wait before it may have spent ctx's. A Job that is gone
// already (deleted by its TTL) is described by lastJob, the last version a
// wait saw, when there is one.
func (c *Cluster) readWorkloadStatus(ctx context.Context, spec WorkloadSpec, lastJob *batchv1.Job) (*WorkloadStatus, error) {
	ctx, cancel := diagnosisContext(ctx)
	defer cancel()
	live, err := c.readWorkload(ctx, WorkloadRef{Kind: spec.Kind, Namespace: spec.Namespace, Name: spec.Name, Container: spec.Pod.Container.Name})
	switch {
	case err != nil:
		return nil, err
	case live != nil:
		return &live.Status, nil
	case lastJob != nil:
		pods, err := listPods(ctx, c.client, lastJob.Namespace, jobPodSelector(lastJob))
		if err != nil {
			pods = nil // its pods go with it: the Job's own counts still hold
		}
		status := jobStatus(lastJob, pods)
		return &status, nil
	}
	return nil, fmt.Errorf("%s %s is gone", spec.objectKind(), spec.ID())
}

// FindWorkloadKind looks for a Job, then a Deployment, called name; found
// is false when there is neither.
func (c *Cluster) FindWorkloadKind(ctx context.Context, namespace, name string) (kind WorkloadKind, found bool, err error) {
	_, err = c.client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return WorkloadJob, true, nil
	}
	if !apierrors.IsNotFound(err) {
		return "", false, fmt.Errorf("reading Job %s/%s: %w", namespace, name, err)
	}
	_, err = c.client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return WorkloadDeployment, true, nil
	}
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	return "", false, fmt.Errorf("reading Deployment %s/%s: %w", namespace, name, err)
}

// cachedWorkloadStatus is the status of a workload whose wait has just
// ended well, from the object that ended it (lastJob: Complete or Failed;
// lastDep: rolled out) and the hub's pod cache, without a request. ok is
// false when the cache does not run, or may be behind the object: it holds
// fewer finished pods than the Job counts, or other than as many live pods
// as the Deployment has replicas (read the status from the API server then).
func (c *Cluster) cachedWorkloadStatus(lastJob *batchv1.Job, lastDep *appsv1.Deployment) (*WorkloadStatus, bool) {
	hub := c.informers()
	switch {
	case lastJob != nil:
		pods, ok := hub.cachedPods(lastJob.Namespace, jobPodSelector(lastJob))
		if !ok || int64(len(slices.DeleteFunc(slices.Clone(pods), func(p corev1.Pod) bool { return !podFinished(&p) }))) < int64(lastJob.Status.Succeeded)+int64(lastJob.Status.Failed) {
			return nil, false
		}
		status := jobStatus(lastJob, pods)
		return &status, true
	case lastDep != nil:
		pods, ok := hub.cachedPods(lastDep.Namespace, deploymentPodSelector(lastDep.Name))
		live := slices.DeleteFunc(slices.Clone(pods), func(p corev1.Pod) bool { return p.DeletionTimestamp != nil || podFinished(&p) })
		if !ok || int32(len(live)) != lastDep.Status.Replicas {
			return nil, false
		}
		status := deploymentStatus(lastDep, pods)
		return &status, true
	}
	return nil, false
}
