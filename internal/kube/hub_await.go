package kube

import (
	"context"
	"fmt"

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
// and a later one is another object. An object the cache does not hold
// (yet) is not gone: deleted is true only once a deletion of that UID
// arrives (or a relist finds it gone: a DeletedFinalStateUnknown), and
// last is then the copy deleted. ctx bounds the wait; on its end the error
// wraps ctx's error.
func awaitObject[T hubObject](ctx context.Context, informer cache.SharedIndexInformer, want watchedObject, done func(T) (bool, error)) (last T, deleted bool, err error) {
	sub, err := subscribe(informer, func(o runtime.Object) bool {
		m, ok := o.(metav1.Object)
		return ok && m.GetUID() == want.uid && m.GetName() == want.name && m.GetNamespace() == want.namespace
	})
	if err != nil {
		return last, false, err
	}
	defer sub.close()
	for {
		events, err := sub.next(ctx)
		if err != nil {
			return last, false, fmt.Errorf("waiting for %s: %w", want, err)
		}
		for _, ev := range events {
			obj, ok := ev.obj.(T)
			if !ok {
				continue
			}
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
