package kube

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// The phases of a workload, as gpu_workload's `status` spells them.
const (
	PhaseComplete    = "Complete"
	PhaseFailed      = "Failed"
	PhaseRunning     = "Running"
	PhasePending     = "Pending"
	PhaseSuspended   = "Suspended"
	PhaseAvailable   = "Available"
	PhaseProgressing = "Progressing"
)

// WorkloadStatus is what the cluster reports about a workload and its pods.
type WorkloadStatus struct {
	// Phase is one of the Phase constants: for a Job Complete, Failed,
	// Suspended, Running or Pending; for a Deployment Available,
	// Progressing or Failed (its progress deadline passed).
	Phase string
	// NodeNames are the nodes the pods run on (a Job's finished pods
	// count: they ran there), sorted, once each.
	NodeNames []string
	// StartTime is when the Job started or the Deployment was created.
	StartTime *time.Time
	// CompletionTime is when the Job completed; nil for a Deployment.
	CompletionTime *time.Time
	// Succeeded and Failed count a Job's pods; nil for a Deployment.
	Succeeded, Failed *int64
}

// jobPodSelector selects a Job's pods by the controller UID Kubernetes put
// in its selector, so a new Job of the same name never matches old pods.
func jobPodSelector(job *batchv1.Job) string {
	if job.Spec.Selector == nil {
		return labels.Set{batchv1.JobNameLabel: job.Name}.String()
	}
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return labels.Set{batchv1.JobNameLabel: job.Name}.String()
	}
	return sel.String()
}

// deploymentPodSelector selects a Deployment's pods, of every revision.
func deploymentPodSelector(name string) string {
	return labels.Set{WorkloadLabel: name}.String()
}

// listPods lists the pods of namespace that selector matches, oldest first.
func listPods(ctx context.Context, client kubernetes.Interface, namespace, selector string) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", namespace, err)
	}
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	return list.Items, nil
}

// jobCondition reports whether the Job has condition t set to True, and it.
func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) (batchv1.JobCondition, bool) {
	for _, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return c, true
		}
	}
	return batchv1.JobCondition{}, false
}

// jobStatus is the status of a Job and its pods.
func jobStatus(job *batchv1.Job, pods []corev1.Pod) WorkloadStatus {
	succeeded, failed := int64(job.Status.Succeeded), int64(job.Status.Failed)
	s := WorkloadStatus{
		NodeNames:      podNodeNames(pods, true),
		StartTime:      timeOf(job.Status.StartTime),
		CompletionTime: timeOf(job.Status.CompletionTime),
		Succeeded:      &succeeded,
		Failed:         &failed,
	}
	_, complete := jobCondition(job, batchv1.JobComplete)
	_, jobFailed := jobCondition(job, batchv1.JobFailed)
	switch {
	case complete:
		s.Phase = PhaseComplete
	case jobFailed:
		s.Phase = PhaseFailed
	case job.Spec.Suspend != nil && *job.Spec.Suspend:
		s.Phase = PhaseSuspended
	case slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }):
		s.Phase = PhaseRunning
	default:
		s.Phase = PhasePending
	}
	return s
}

// deploymentStatus is the status of a Deployment and its pods.
func deploymentStatus(dep *appsv1.Deployment, pods []corev1.Pod) WorkloadStatus {
	s := WorkloadStatus{
		NodeNames: podNodeNames(pods, false),
		StartTime: timeOf(&dep.CreationTimestamp),
	}
	switch {
	case deploymentProgressDeadlineExceeded(dep):
		s.Phase = PhaseFailed
	case deploymentRolledOut(dep):
		s.Phase = PhaseAvailable
	default:
		s.Phase = PhaseProgressing
	}
	return s
}

// deploymentRolledOut is `kubectl rollout status` done: the controller has
// seen the current spec, every replica runs the current template, no old
// replica is left, and all are available.
func deploymentRolledOut(dep *appsv1.Deployment) bool {
	if dep.Generation > dep.Status.ObservedGeneration {
		return false
	}
	replicas := int32(1)
	if dep.Spec.Replicas != nil {
		replicas = *dep.Spec.Replicas
	}
	st := dep.Status
	return st.UpdatedReplicas >= replicas && st.Replicas <= st.UpdatedReplicas && st.AvailableReplicas >= st.UpdatedReplicas
}

func deploymentProgressDeadlineExceeded(dep *appsv1.Deployment) bool {
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return true
		}
	}
	return false
}

// podNodeNames lists, sorted and once each, the nodes pods are bound to. A
// Job's finished pods count (they ran there); a Deployment's do not, nor do
// pods being deleted.
func podNodeNames(pods []corev1.Pod, includeFinished bool) []string {
	names := []string{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || (!includeFinished && (p.DeletionTimestamp != nil || podFinished(&p))) {
			continue
		}
		names = append(names, p.Spec.NodeName)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func podFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
