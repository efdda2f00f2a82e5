package kube

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// WaitForList follows a collection (e.g. every node) until observe says
// the caller's condition holds. observe sees each object of the first list,
// then each change (deleted true for a deletion), and keeps its own
// bookkeeping, so a step costs O(1) whatever the collection's size. Like
// WaitForObject it lists, then watches: no polling. ctx bounds the wait;
// on expiry the error wraps the context's error.
func WaitForList[T runtime.Object, L runtime.Object](ctx context.Context, lw ListWatchFunctions[L], options func(*metav1.ListOptions), observe func(obj T, deleted bool) (bool, error)) error {
	if options == nil {
		options = func(*metav1.ListOptions) {}
	}
	// The requests outlive ctx until UntilWithSync has stopped its
	// informer, which otherwise logs the expired context as a watch error.
	requestCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	listWatch := &cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			consistentList(&opts)
			options(&opts)
			return lw.List(requestCtx, opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			options(&opts)
			return lw.Watch(requestCtx, opts)
		},
	}
	var zero T
	precondition := func(store cache.Store) (bool, error) {
		for _, item := range store.List() {
			obj, ok := item.(T)
			if !ok {
				continue
			}
			if done, err := observe(obj, false); done || err != nil {
				return done, err
			}
		}
		return false, nil
	}
	_, err := watchtools.UntilWithSync(ctx, listWatch, zero, precondition, func(ev watch.Event) (bool, error) {
		obj, ok := ev.Object.(T)
		if !ok {
			return false, nil // a bookmark or a status error: keep watching
		}
		return observe(obj, ev.Type == watch.Deleted)
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("watching: %w", ctx.Err())
	}
	if errors.Is(err, watchtools.ErrWatchClosed) {
		return fmt.Errorf("watching: the watch closed: %w", err)
	}
	return err
}
