package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWaitForObjectFollowsWatchEvents(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	configMaps := cluster.Client().CoreV1().ConfigMaps(metav1.NamespaceDefault)
	lw := ListWatchFunctions[*corev1.ConfigMapList]{List: configMaps.List, Watch: configMaps.Watch}
	hasReady := func(cm *corev1.ConfigMap, exists bool) (bool, error) {
		return exists && cm.Data["ready"] == "true", nil
	}

	// Not there yet: created, then changed, while the wait watches.
	go func() {
		cm, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "wait-me"}, Data: map[string]string{"ready": "false"}}, metav1.CreateOptions{})
		if err != nil {
			return
		}
		cm.Data["ready"] = "true"
		_, _ = configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	}()
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	got, err := WaitForObject(waitCtx, lw, "wait-me", hasReady)
	require.NoError(t, err)
	require.Equal(t, "true", got.Data["ready"])

	// Already met: returns from the initial list.
	got, err = WaitForObject(waitCtx, lw, "wait-me", hasReady)
	require.NoError(t, err)
	require.Equal(t, "wait-me", got.Name)

	// Never met: the deadline ends the wait, and the last object seen comes back for a diagnosis.
	shortCtx, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	got, err = WaitForObject(shortCtx, lw, "wait-me", func(cm *corev1.ConfigMap, exists bool) (bool, error) {
		return exists && cm.Data["ready"] == "never", nil
	})
	require.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
	require.Equal(t, "wait-me", got.Name)

	// Deletion is seen as "does not exist".
	go func() { _ = configMaps.Delete(ctx, "wait-me", metav1.DeleteOptions{}) }()
	_, err = WaitForObject(waitCtx, lw, "wait-me", func(_ *corev1.ConfigMap, exists bool) (bool, error) { return !exists, nil })
	require.NoError(t, err)
}
