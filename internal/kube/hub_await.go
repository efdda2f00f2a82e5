package kube

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// watchedObject is the one object a wait follows: its name, and the UID of
// the object this apply created or read.
type watchedObject struct {
	namespace, name string
	uid             types.UID
}

func (w watchedObject) String() string { return w.namespace + "/" + w.name }

// hubObject is what the hub's informers hold.
type hubObject interface {
	runtime.Object
	metav1.Object
}

// awaitObject follows want on a shared informer until done says so, and
// returns the last version it saw. Only versions with want's UID count: a
// cached copy of an earlier object of the same name never ends the wait,
// and a later one is another object. deleted is true once a deletion of
// that UID arrives (or a relist finds it gone: a DeletedFinalStateUnknown),
// and last is then the copy deleted.
//
// An object the cache does not hold is not gone by itself: the informer
// may not have seen its creation yet. But an object created and deleted
// while the informer was not watching (before its first list, or during an
// outage) never reaches the cache at all, and no event would ever say so.
// So while the informer, synced, still lacks want, stillThere (a GET, the
// one authority) settles it: gone, and the wait ends as deleted; there,
// and the event is on its way, checked again after 0.1 s, 0.2 s, ... 30 s until
// it comes. Once the cache has shown want, events alone drive the wait.
// ctx bounds the wait; on its end the error wraps ctx's error.
func awaitObject[T hubObject](ctx context.Context, informer cache.SharedIndexInformer, want watchedObject, stillThere func(context.Context) (bool, error), done func(T) (bool, error)) (last T, deleted bool, err error) {
	sub, err := subscribe(informer, func(o runtime.Object) bool {
		m, ok := o.(metav1.Object)
		return ok && m.GetUID() == want.uid && m.GetName() == want.name && m.GetNamespace() == want.namespace
	})
	if err != nil {
		return last, false, err
	}
	defer sub.close()
	absence := absenceCheck{next: absenceFirstCheck}
	for {
		events, err := sub.next(ctx, absence.timer())
		if err != nil {
			return last, false, fmt.Errorf("waiting for %s: %w", want, err)
		}
		if len(events) == 0 && !absence.seen {
			if !sub.synced() {
				absence.retry(absenceFirstCheck) // the first list is not in yet
				continue
			}
			there, err := stillThere(ctx)
			if err == nil && !there {
				return last, true, nil
			}
			absence.retry(absence.next) // there, or not known: ask again later
			absence.next = min(2*absence.next, absenceMaxCheck)
			continue
		}
		for _, ev := range events {
			obj, ok := ev.obj.(T)
			if !ok {
				continue
			}
			absence.seen = true
			last = obj
			if ev.deleted {
				return last, true, nil
			}
			if finished, err := done(obj); finished || err != nil {
				return last, false, err
			}
		}
	}
}

// How soon awaitObject asks the API server about an object its synced
// cache lacks, and how far the interval grows while it is still lacking.
const (
	absenceFirstCheck = 100 * time.Millisecond
	absenceMaxCheck   = 30 * time.Second
)

// absenceCheck is awaitObject's schedule of GETs while the cache lacks the
// object: none once it has been seen.
type absenceCheck struct {
	seen    bool
	next    time.Duration
	pending *time.Timer
}

// timer is the channel that fires when the cache's lack of the object is
// to be checked; nil (never) once the object has been seen.
func (a *absenceCheck) timer() <-chan time.Time {
	if a.seen {
		return nil
	}
	if a.pending == nil {
		a.pending = time.NewTimer(absenceFirstCheck)
	}
	return a.pending.C
}

func (a *absenceCheck) retry(after time.Duration) { a.pending = time.NewTimer(after) }

// stillThere is awaitObject's GET: whether the object called name with uid
// still exists. NotFound, or another object under the name, is gone; any
// other error is not known (the caller asks again later, and an API server
// unreachable for long ends the wait through runWait's guard).
func stillThere[T hubObject](get func(context.Context, string, metav1.GetOptions) (T, error), name string, uid types.UID) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		obj, err := get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return true, err
		}
		return obj.GetUID() == uid, nil
	}
}
