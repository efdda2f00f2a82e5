package kube

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWaitForListFollowsACollection(t *testing.T) {
	requireCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	configMaps := cluster.Client().CoreV1().ConfigMaps(metav1.NamespaceDefault)
	lw := ListWatchFunctions[*corev1.ConfigMapList]{List: configMaps.List, Watch: configMaps.Watch}
	onlyOurs := func(o *metav1.ListOptions) { o.LabelSelector = "wait-list=test" }
	names := []string{"wait-list-0", "wait-list-1", "wait-list-2"}
	t.Cleanup(func() {
		for _, name := range names {
			_ = configMaps.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})

	// One exists before the wait, two are created while it watches.
	create := func(name string) error {
		_, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"wait-list": "test"}}}, metav1.CreateOptions{})
		return err
	}
	require.NoError(t, create(names[0]))
	created := make(chan error, 1)
	go func() {
		var errs []error
		for _, name := range names[1:] {
			errs = append(errs, create(name))
		}
		created <- errors.Join(errs...)
	}()
	seen := map[string]bool{}
	var observed int
	err := WaitForList(ctx, lw, onlyOurs, func(cm *corev1.ConfigMap, deleted bool) (bool, error) {
		observed++
		seen[cm.Name] = !deleted
		return len(seen) == len(names), nil
	})
	require.NoError(t, err)
	require.NoError(t, <-created)
	require.Equal(t, map[string]bool{"wait-list-0": true, "wait-list-1": true, "wait-list-2": true}, seen)
	require.Equal(t, len(names), observed, "each object is observed once, not the whole list per event")

	// Deletions are observed as such. The delete starts once the wait has
	// listed names[1]: a delete that finished before the list would leave
	// nothing to observe.
	var deleteOnce sync.Once
	deleted := make(chan error, 1)
	err = WaitForList(ctx, lw, onlyOurs, func(cm *corev1.ConfigMap, gone bool) (bool, error) {
		if cm.Name == names[1] && !gone {
			deleteOnce.Do(func() {
				go func() { deleted <- configMaps.Delete(ctx, names[1], metav1.DeleteOptions{}) }()
			})
		}
		return gone && cm.Name == names[1], nil
	})
	require.NoError(t, err)
	require.NoError(t, <-deleted)

	// A condition never met ends with the context.
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	err = WaitForList(short, lw, onlyOurs, func(*corev1.ConfigMap, bool) (bool, error) { return false, nil })
	require.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
}
