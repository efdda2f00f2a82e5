package kube

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

// A Job's spec is immutable but for a few fields (Kubernetes'
// ValidateJobSpecUpdate in pkg/apis/batch/validation): parallelism,
// backoffLimit, activeDeadlineSeconds, ttlSecondsAfterFinished and
// suspend change in place; completions, the selector and the pod template
// do not (the template's scheduling directives only while a Job that never
// started is suspended, which this package does not use).

// jobInPlace copies the fields of a Job that can change in place from
// from to to.
func jobInPlace(to, from *JobSettings) {
	to.Parallelism = from.Parallelism
	to.BackoffLimit = from.BackoffLimit
	to.ActiveDeadlineSeconds = from.ActiveDeadlineSeconds
	to.TTLSecondsAfterFinished = from.TTLSecondsAfterFinished
	to.Suspend = from.Suspend
}

// JobNeedsReplacement reports whether going from the Job of prior to the
// Job of planned changes more than Kubernetes lets a Job change in place,
// judged on the Jobs the two specs build, so that a new attribute of the
// spec is covered without a list to keep.
func JobNeedsReplacement(prior, planned WorkloadSpec) bool {
	settled := prior
	jobInPlace(&settled.Job, &planned.Job)
	return !equality.Semantic.DeepEqual(BuildJob(settled), BuildJob(planned))
}

// patchJobInPlace sends the in-place fields of spec's Job as a JSON merge
// patch: a field unset in spec is removed (null), so Kubernetes' default
// applies again.
func (c *Cluster) patchJobInPlace(ctx context.Context, spec WorkloadSpec) error {
	j := spec.Job
	patch := map[string]any{"spec": map[string]any{
		"parallelism":             j.Parallelism,
		"backoffLimit":            j.BackoffLimit,
		"activeDeadlineSeconds":   j.ActiveDeadlineSeconds,
		"ttlSecondsAfterFinished": j.TTLSecondsAfterFinished,
		"suspend":                 j.Suspend,
	}}
	if spec.Owner != "" {
		patch["metadata"] = map[string]any{"annotations": map[string]string{AnnotationOwner: spec.Owner}}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding the Job patch: %w", err)
	}
	_, err = c.client.BatchV1().Jobs(spec.Namespace).Patch(ctx, spec.Name, k8stypes.MergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// SameWorkload reports whether a and b build the same Job or Deployment, so
// that an update that changes neither sends nothing.
func SameWorkload(a, b WorkloadSpec) bool {
	if a.Kind != b.Kind {
		return false
	}
	if a.Kind == WorkloadDeployment {
		return equality.Semantic.DeepEqual(BuildDeployment(a), BuildDeployment(b))
	}
	return equality.Semantic.DeepEqual(BuildJob(a), BuildJob(b))
}
