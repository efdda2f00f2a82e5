package main

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// allocatableWatcher records, with this process's clock, when each node of
// the group is first seen advertising all its GPUs: the reference the
// apply's return is compared with.
type allocatableWatcher struct {
	want   int
	cancel context.CancelFunc
	mu     sync.Mutex
	seen   map[string]time.Time
}

func watchAllocatable(ctx context.Context, client kubernetes.Interface, group string, nodes, gpus int) (*allocatableWatcher, error) {
	ctx, cancel := context.WithCancel(ctx)
	w, err := client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{LabelSelector: "eks.amazonaws.com/nodegroup=" + group})
	if err != nil {
		cancel()
		return nil, err
	}
	aw := &allocatableWatcher{want: nodes, cancel: cancel, seen: map[string]time.Time{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			node, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			q := node.Status.Allocatable["nvidia.com/gpu"]
			if q.Value() < int64(gpus) {
				continue
			}
			aw.mu.Lock()
			if _, done := aw.seen[node.Name]; !done {
				aw.seen[node.Name] = time.Now()
			}
			aw.mu.Unlock()
		}
	}()
	return aw, nil
}

// lastAllocatable is when the last of the wanted nodes advertised its GPUs.
func (aw *allocatableWatcher) lastAllocatable() (time.Time, bool) {
	aw.mu.Lock()
	defer aw.mu.Unlock()
	if len(aw.seen) < aw.want {
		return time.Time{}, false
	}
	var last time.Time
	for _, t := range aw.seen {
		if t.After(last) {
			last = t
		}
	}
	return last, true
}

func (aw *allocatableWatcher) stop() { aw.cancel() }
