package k8s

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// waitFor lists resource (e.g. "pods" through client.CoreV1().RESTClient())
// in namespace, narrowed by the selectors of opts, then watches it until
// done accepts an object, and returns that object; or the error of ctx.
func waitFor[T runtime.Object](ctx context.Context, client rest.Interface, resource, namespace string, opts metav1.ListOptions, done func(T) bool) (T, error) {
	lw := cache.NewFilteredListWatchFromClient(client, resource, namespace, func(o *metav1.ListOptions) {
		o.LabelSelector, o.FieldSelector = opts.LabelSelector, opts.FieldSelector
	})
	var found, example T
	accept := func(obj any) bool {
		o, ok := obj.(T)
		if ok && done(o) {
			found = o
			return true
		}
		return false
	}
	_, err := watchtools.UntilWithSync(ctx, lw, example, func(store cache.Store) (bool, error) {
		for _, obj := range store.List() {
			if accept(obj) {
				return true, nil
			}
		}
		return false, nil
	}, func(ev watch.Event) (bool, error) { return ev.Type != watch.Deleted && accept(ev.Object), nil })
	return found, err
}
