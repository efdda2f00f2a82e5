package k8s

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// nodeAgentPods follows the pods of one node agent (a DaemonSet's pods
// that a simulator stands in for, recognized by isAgent) with an informer,
// and reconciles each node such a pod runs on when one changes or goes:
// the machinery the device-plugin and DRA driver simulators share.
type nodeAgentPods struct {
	name    string // the simulator's, for its log
	isAgent func(*corev1.Pod) bool
	// gone, if set, is told of an agent pod that was deleted.
	gone func(types.UID)

	log   func(format string, args ...any)
	pods  cache.Indexer
	queue workqueue.TypedRateLimitingInterface[string]

	mu         sync.Mutex
	agentNodes map[types.UID]string // agent pod -> node, to requeue on delete
}

const agentPodsByNode = "spec.nodeName"

// newNodeAgentPods returns a follower of isAgent's pods that logs to log
// with a timestamp per line.
func newNodeAgentPods(name string, log io.Writer, isAgent func(*corev1.Pod) bool) *nodeAgentPods {
	var logMu sync.Mutex
	return &nodeAgentPods{
		name:    name,
		isAgent: isAgent,
		log: func(format string, args ...any) {
			logMu.Lock()
			defer logMu.Unlock()
			fmt.Fprintf(log, time.Now().UTC().Format(time.RFC3339Nano)+" "+format+"\n", args...)
		},
		queue:      workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		agentNodes: map[types.UID]string{},
	}
}

// run follows the pods of the cluster behind client and calls reconcile
// for a node, from workers goroutines but never twice at once for one
// node, until ctx ends. A reconcile that errs is logged and retried with
// back-off.
func (f *nodeAgentPods) run(ctx context.Context, client kubernetes.Interface, workers int, reconcile func(ctx context.Context, node string) error) error {
	defer f.queue.ShutDown()
	factory := informers.NewSharedInformerFactory(client, 0)
	informer := factory.Core().V1().Pods().Informer()
	if err := informer.AddIndexers(cache.Indexers{agentPodsByNode: func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{pod.Spec.NodeName}, nil
	}}); err != nil {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	f.pods = informer.GetIndexer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    f.podChanged,
		UpdateFunc: func(_, obj any) { f.podChanged(obj) },
		DeleteFunc: f.podDeleted,
	}); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return ctx.Err()
	}
	f.log("%s: following pods", f.name)

	go func() {
		<-ctx.Done()
		f.queue.ShutDown()
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for f.processNext(ctx, reconcile) {
			}
		})
	}
	wg.Wait()
	return nil
}

// agentPodsOn are the agent's pods bound to node.
func (f *nodeAgentPods) agentPodsOn(node string) ([]*corev1.Pod, error) {
	objs, err := f.pods.ByIndex(agentPodsByNode, node)
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok && f.isAgent(pod) {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

func (f *nodeAgentPods) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" || !f.isAgent(pod) {
		return
	}
	f.mu.Lock()
	f.agentNodes[pod.UID] = pod.Spec.NodeName
	f.mu.Unlock()
	f.queue.Add(pod.Spec.NodeName)
}

func (f *nodeAgentPods) podDeleted(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	f.mu.Lock()
	node, known := f.agentNodes[pod.UID]
	delete(f.agentNodes, pod.UID)
	f.mu.Unlock()
	if f.gone != nil {
		f.gone(pod.UID)
	}
	if known {
		f.queue.Add(node)
	}
}

func (f *nodeAgentPods) processNext(ctx context.Context, reconcile func(ctx context.Context, node string) error) bool {
	node, shutdown := f.queue.Get()
	if shutdown {
		return false
	}
	defer f.queue.Done(node)
	if err := reconcile(ctx, node); err != nil && ctx.Err() == nil {
		f.log("node %s: %v (retrying)", node, err)
		f.queue.AddRateLimited(node)
		return true
	}
	f.queue.Forget(node)
	return true
}
