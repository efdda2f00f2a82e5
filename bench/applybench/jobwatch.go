package main

import (
	"context"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// jobWatcher records, with this process's clock, when each Job is first seen
// Complete: the reference the provider's notice time is compared with.
type jobWatcher struct {
	mu       sync.Mutex
	complete map[string]time.Time // namespace/name -> first seen Complete
}

func watchJobCompletions(ctx context.Context, client kubernetes.Interface, namespace string) (*jobWatcher, error) {
	w, err := client.BatchV1().Jobs(namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	jw := &jobWatcher{complete: map[string]time.Time{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			job, ok := ev.Object.(*batchv1.Job)
			if !ok || !jobComplete(job) {
				continue
			}
			jw.mu.Lock()
			key := job.Namespace + "/" + job.Name
			if _, seen := jw.complete[key]; !seen {
				jw.complete[key] = time.Now()
			}
			jw.mu.Unlock()
		}
	}()
	return jw, nil
}

func (jw *jobWatcher) completions() map[string]time.Time {
	jw.mu.Lock()
	defer jw.mu.Unlock()
	out := make(map[string]time.Time, len(jw.complete))
	for k, v := range jw.complete {
		out[k] = v
	}
	return out
}

func jobComplete(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
