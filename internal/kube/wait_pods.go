package kube

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// WaitForPod watches the pods of namespace that labelSelector matches until
// cond holds for one of them, and returns that pod. Like WaitForObject it
// lists first, then follows watch events; ctx bounds the wait.
func WaitForPod(ctx context.Context, client kubernetes.Interface, namespace, labelSelector string, cond func(*corev1.Pod) (bool, error)) (*corev1.Pod, error) {
	pods := client.CoreV1().Pods(namespace)
	listWatch := &cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			consistentList(&opts)
			opts.LabelSelector = labelSelector
			return pods.List(ctx, opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = labelSelector
			return pods.Watch(ctx, opts)
		},
	}
	var found *corev1.Pod
	check := func(obj any) (bool, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		done, err := cond(pod)
		if done {
			found = pod
		}
		return done, err
	}
	precondition := func(store cache.Store) (bool, error) {
		for _, obj := range store.List() {
			if done, err := check(obj); done || err != nil {
				return done, err
			}
		}
		return false, nil
	}
	_, err := watchtools.UntilWithSync(ctx, listWatch, &corev1.Pod{}, precondition, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, nil
		}
		return check(ev.Object)
	})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("watching pods %s in %s: %w", labelSelector, namespace, ctx.Err())
	}
	if errors.Is(err, watchtools.ErrWatchClosed) {
		return nil, fmt.Errorf("watching pods %s in %s: the watch closed: %w", labelSelector, namespace, err)
	}
	return found, err
}
