package kube

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// hubEvent is one change a subscription saw: the object, and whether it
// was deleted.
type hubEvent struct {
	obj     runtime.Object
	deleted bool
}

// subscription is a wait's interest in some objects of a shared informer:
// the informer's handler (client-go delivers a handler's notifications in
// order, on a goroutine of its own, and never blocks the informer for it:
// tools/cache shared_informer.go, processorListener) queues those that
// match, and the wait takes them from next. No polling: next blocks on a
// channel the handler signals.
type subscription struct {
	informer     cache.SharedIndexInformer
	registration cache.ResourceEventHandlerRegistration

	mu     sync.Mutex
	queue  []hubEvent
	signal chan struct{}
}

// subscribe registers interest in the objects of informer that match. The
// informer first replays what its cache holds as additions, then every
// change. Call close when done.
func subscribe(informer cache.SharedIndexInformer, match func(runtime.Object) bool) (*subscription, error) {
	s := &subscription{informer: informer, signal: make(chan struct{}, 1)}
	push := func(obj any, deleted bool) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			// A deletion the watch missed and a relist found out.
			obj = tomb.Obj
		}
		o, ok := obj.(runtime.Object)
		if !ok || !match(o) {
			return
		}
		s.mu.Lock()
		s.queue = append(s.queue, hubEvent{obj: o, deleted: deleted})
		s.mu.Unlock()
		select {
		case s.signal <- struct{}{}:
		default:
		}
	}
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { push(obj, false) },
		UpdateFunc: func(_, obj any) { push(obj, false) },
		DeleteFunc: func(obj any) { push(obj, true) },
	})
	if err != nil {
		return nil, fmt.Errorf("registering with the shared informer: %w", err)
	}
	s.registration = reg
	return s, nil
}

// next returns the events queued since the last call, blocking until there
// is one, wake fires (no events then; a nil wake never fires) or ctx ends.
func (s *subscription) next(ctx context.Context, wake <-chan time.Time) ([]hubEvent, error) {
	for {
		s.mu.Lock()
		events := s.queue
		s.queue = nil
		s.mu.Unlock()
		if len(events) > 0 {
			return events, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wake:
			return nil, nil
		case <-s.signal:
		}
	}
}

// synced reports whether the informer's cache had been replayed to this
// subscription (its first list included).
func (s *subscription) synced() bool { return s.registration.HasSynced() }

func (s *subscription) close() { _ = s.informer.RemoveEventHandler(s.registration) }
