package kube

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// hubKind is a collection the hub keeps informers of.
type hubKind string

const (
	hubJobs        hubKind = "jobs"
	hubDeployments hubKind = "deployments"
	hubPods        hubKind = "pods"
	hubDaemonSets  hubKind = "daemonsets"
	// hubNodes is every node of the cluster (namespace "").
	hubNodes hubKind = "nodes"
	// hubBoundPods is every pod of the cluster that holds resources on a
	// node (nonTerminatedBoundPods), what ListNodeFacts counts as used.
	hubBoundPods hubKind = "boundpods"
)

// hubKey names one informer: a kind in a namespace ("" for nodes and bound
// pods, which are cluster-wide).
type hubKey struct {
	kind      hubKind
	namespace string
}

func (k hubKey) String() string {
	if k.namespace == "" {
		return string(k.kind)
	}
	return string(k.kind) + " in " + k.namespace
}

func (k hubKind) example() runtime.Object {
	switch k {
	case hubJobs:
		return &batchv1.Job{}
	case hubDeployments:
		return &appsv1.Deployment{}
	case hubDaemonSets:
		return &appsv1.DaemonSet{}
	case hubNodes:
		return &corev1.Node{}
	}
	return &corev1.Pod{}
}

// listWatch is the ListerWatcher of key's informer; its requests live as
// long as ctx. Every list is a consistent read (consistentList): the first
// one, so that an informer started after a write sees it, and relists too.
func (k hubKey) listWatch(ctx context.Context, client kubernetes.Interface) cache.ListerWatcher {
	var (
		list      func(context.Context, metav1.ListOptions) (runtime.Object, error)
		watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)
		options   = func(*metav1.ListOptions) {}
	)
	ns := k.namespace
	switch k.kind {
	case hubJobs:
		c := client.BatchV1().Jobs(ns)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, o) }
		watchFunc = c.Watch
	case hubDeployments:
		c := client.AppsV1().Deployments(ns)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, o) }
		watchFunc = c.Watch
	case hubDaemonSets:
		c := client.AppsV1().DaemonSets(ns)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, o) }
		watchFunc = c.Watch
	case hubNodes:
		c := client.CoreV1().Nodes()
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, o) }
		watchFunc = c.Watch
	case hubPods, hubBoundPods:
		c := client.CoreV1().Pods(ns)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, o) }
		watchFunc = c.Watch
		if k.kind == hubBoundPods {
			options = func(o *metav1.ListOptions) { o.FieldSelector = nonTerminatedBoundPods }
		}
	}
	return &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			consistentList(&o)
			options(&o)
			return list(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			options(&o)
			return watchFunc(ctx, o)
		},
	}
}
