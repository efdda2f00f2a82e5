package kube

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestWaitForObjectListsConsistently pins the fix for a stale first read:
// an informer lists at resourceVersion "0", which the API server may answer
// from a watch cache that has not seen the write the wait follows, so a
// Deployment's pre-update status could end the wait for its update.
func TestWaitForObjectListsConsistently(t *testing.T) {
	var listed []metav1.ListOptions
	lw := ListWatchFunctions[*appsv1.DeploymentList]{
		List: func(_ context.Context, opts metav1.ListOptions) (*appsv1.DeploymentList, error) {
			listed = append(listed, opts)
			return &appsv1.DeploymentList{
				ListMeta: metav1.ListMeta{ResourceVersion: "7"},
				Items:    []appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Name: "serve", Namespace: "ns", ResourceVersion: "7"}}},
			}, nil
		},
		Watch: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	obj, err := WaitForObject(ctx, lw, "serve", func(d *appsv1.Deployment, exists bool) (bool, error) { return exists, nil })
	if err != nil || obj == nil || obj.Name != "serve" {
		t.Fatalf("WaitForObject = %v, %v", obj, err)
	}
	if len(listed) == 0 {
		t.Fatal("no list request")
	}
	for _, opts := range listed {
		if opts.ResourceVersion != "" || opts.ResourceVersionMatch != "" {
			t.Errorf("listed with resourceVersion %q (match %q), want a consistent read (\"\")", opts.ResourceVersion, opts.ResourceVersionMatch)
		}
		if opts.FieldSelector != "metadata.name=serve" {
			t.Errorf("field selector %q", opts.FieldSelector)
		}
	}
}
