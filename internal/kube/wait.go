package kube

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// ListWatchFunctions are the typed List and Watch of one resource kind in one
// namespace, e.g. client.BatchV1().Jobs(ns).List / .Watch.
type ListWatchFunctions[L runtime.Object] struct {
	List  func(context.Context, metav1.ListOptions) (L, error)
	Watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// WaitForObject watches the object called name until done says so, and
// returns the last version seen. done gets nil when the object does not exist
// (yet, or any more). It lists first, so a condition already met returns at
// once, then follows watch events: no polling, no sleeps. ctx bounds the
// wait; on its expiry the error wraps context.DeadlineExceeded and the last
// object seen is still returned, for a diagnosis.
func WaitForObject[T runtime.Object, L runtime.Object](ctx context.Context, lw ListWatchFunctions[L], name string, done func(obj T, exists bool) (bool, error)) (T, error) {
	var last T
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	// The requests outlive ctx until UntilWithSync has stopped its
	// informer, which otherwise logs the expired context as a watch error.
	requestCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	listWatch := &cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			consistentList(&opts)
			opts.FieldSelector = selector
			return lw.List(requestCtx, opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return lw.Watch(requestCtx, opts)
		},
	}
	var zero T
	precondition := func(store cache.Store) (bool, error) {
		items := store.List()
		if len(items) == 0 {
			return done(zero, false)
		}
		obj, ok := items[0].(T)
		if !ok {
			return false, fmt.Errorf("watching %s: unexpected object %T", name, items[0])
		}
		last = obj
		return done(obj, true)
	}
	_, err := watchtools.UntilWithSync(ctx, listWatch, zero, precondition, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			last = zero
			return done(zero, false)
		}
		obj, ok := ev.Object.(T)
		if !ok {
			return false, nil // a bookmark or a status error: keep watching
		}
		last = obj
		return done(obj, true)
	})
	if err != nil && ctx.Err() != nil {
		return last, fmt.Errorf("waiting for %s: %w", name, ctx.Err())
	}
	if errors.Is(err, watchtools.ErrWatchClosed) {
		return last, fmt.Errorf("waiting for %s: the watch closed: %w", name, err)
	}
	return last, err
}

// runWait runs wait under a context that ends once the API server has been
// unreachable for longer than the Cluster's limit or has rejected the
// connection's credentials (guardWait), and logs it as what (a word such
// as "job_completion") on the object id, with its duration. When the guard
// ended it, its cause is the error: whatever wait made of its canceled
// context says less.
func (c *Cluster) runWait(ctx context.Context, what, id string, wait func(context.Context) error) error {
	guarded, cancel := c.guardWait(ctx)
	defer cancel()
	waited := startWait(ctx, what, id)
	err := wait(guarded)
	if cause := guardCause(guarded); cause != nil {
		err = fmt.Errorf("waiting for %s: %w", id, cause)
	}
	waited(err)
	return err
}

// consistentList makes an informer's list a consistent read. An informer
// lists at resourceVersion "0", which the API server may answer from a watch
// cache that has not yet seen the write a wait follows: a Deployment's status
// from before its update would then end the wait for that update.
func consistentList(opts *metav1.ListOptions) {
	opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
}
