package provider

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// jobPodSelector selects a Job's pods by the controller UID Kubernetes put
// in its selector, so a new Job of the same name never matches old pods.
func jobPodSelector(job *batchv1.Job) string {
	if job.Spec.Selector == nil {
		return labels.Set{"batch.kubernetes.io/job-name": job.Name}.String()
	}
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return labels.Set{"batch.kubernetes.io/job-name": job.Name}.String()
	}
	return sel.String()
}

// deploymentPodSelector selects a Deployment's pods, of every revision.
func deploymentPodSelector(name string) string {
	return labels.Set{workloadLabel: name}.String()
}

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

// jobStatus is the computed attributes of a Job and its pods.
func jobStatus(job *batchv1.Job, pods []corev1.Pod) workloadStatusModel {
	s := workloadStatusModel{
		NodeNames:      podNodeNames(pods, true),
		StartTime:      timeOrNull(job.Status.StartTime),
		CompletionTime: timeOrNull(job.Status.CompletionTime),
		Succeeded:      types.Int64Value(int64(job.Status.Succeeded)),
		Failed:         types.Int64Value(int64(job.Status.Failed)),
	}
	_, complete := jobCondition(job, batchv1.JobComplete)
	_, failed := jobCondition(job, batchv1.JobFailed)
	switch {
	case complete:
		s.Status = types.StringValue("Complete")
	case failed:
		s.Status = types.StringValue("Failed")
	case slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }):
		s.Status = types.StringValue("Running")
	default:
		s.Status = types.StringValue("Pending")
	}
	return s
}

// deploymentStatus is the computed attributes of a Deployment and its pods.
func deploymentStatus(dep *appsv1.Deployment, pods []corev1.Pod) workloadStatusModel {
	s := workloadStatusModel{
		NodeNames:      podNodeNames(pods, false),
		StartTime:      timeOrNull(&dep.CreationTimestamp),
		CompletionTime: types.StringNull(),
		Succeeded:      types.Int64Null(),
		Failed:         types.Int64Null(),
	}
	switch {
	case deploymentProgressDeadlineExceeded(dep):
		s.Status = types.StringValue("Failed")
	case deploymentRolledOut(dep):
		s.Status = types.StringValue("Available")
	default:
		s.Status = types.StringValue("Progressing")
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
func podNodeNames(pods []corev1.Pod, includeFinished bool) types.List {
	var names []string
	for _, p := range pods {
		if p.Spec.NodeName == "" || (!includeFinished && (p.DeletionTimestamp != nil || podFinished(&p))) {
			continue
		}
		names = append(names, p.Spec.NodeName)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	return types.ListValueMust(types.StringType, stringValues(names))
}

func podFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func stringValues(ss []string) []attr.Value {
	out := make([]attr.Value, len(ss))
	for i, s := range ss {
		out[i] = types.StringValue(s)
	}
	return out
}

func timeOrNull(t *metav1.Time) types.String {
	if t == nil || t.IsZero() {
		return types.StringNull()
	}
	return types.StringValue(t.UTC().Format(time.RFC3339))
}
