package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// The device-plugin simulator stands in for the kubelet's device manager,
// which kwok does not simulate. When a pod running NVIDIA's device plugin
// (see pluginContainer) is Running on a node that GPU Feature Discovery
// labeled with nvidia.com/gpu.count (or, without GFD's labels, whose
// instance type has GPUs: an EKS node group's), the plugin would register with the
// kubelet and list its GPUs; the kubelet would then report them in the
// node's capacity and allocatable. The simulator writes those: count × the
// time-slicing (or MPS) replicas of the config the pod mounts, under
// nvidia.com/gpu or, with renameByDefault, nvidia.com/gpu.shared. When the
// last plugin pod of a node stops running or goes away, allocatable drops
// to 0 and capacity stays, as when a plugin unregisters.
//
// It follows pods with an informer (list + watch, no polling) and touches
// only the nodes where it has seen a plugin pod: nodes registered with GPU
// capacity and no plugin keep theirs. What it does not do: MIG devices,
// per-GPU health, the GFD labels a sharing config changes
// (nvidia.com/gpu.replicas, .product -SHARED), and the stale resource a
// kubelet keeps after a plugin renames its resource (it sets that one's
// allocatable to 0 as well).

// devicePluginSimulator reconciles one node at a time from a work queue.
type devicePluginSimulator struct {
	client kubernetes.Interface
	log    func(format string, args ...any)
	pods   cache.Indexer
	queue  workqueue.TypedRateLimitingInterface[string]

	mu          sync.Mutex
	adverts     map[types.UID]advertisement             // per plugin pod, read once when it runs
	advertised  map[string]map[corev1.ResourceName]bool // per node, every resource ever advertised
	pluginNodes map[types.UID]string                    // plugin, GFD and NFD worker pod -> node, to requeue on delete
	masters     map[types.UID]bool                      // running nfd-master pods: allow nvidia.com labels
}

const podsByNodeIndex = "spec.nodeName"

// RunDevicePluginSimulator simulates the kubelet's device-plugin
// registration on the cluster behind client until ctx ends (see the
// comment above devicePluginSimulator). Each change it makes is logged to
// log. In-process testbeds run it from Start; `gpu-testbed simulate` runs
// it for a detached one.
func RunDevicePluginSimulator(ctx context.Context, client kubernetes.Interface, log io.Writer) error {
	var logMu sync.Mutex
	s := &devicePluginSimulator{
		client: client,
		log: func(format string, args ...any) {
			logMu.Lock()
			defer logMu.Unlock()
			fmt.Fprintf(log, time.Now().UTC().Format(time.RFC3339Nano)+" "+format+"\n", args...)
		},
		queue:       workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		adverts:     map[types.UID]advertisement{},
		advertised:  map[string]map[corev1.ResourceName]bool{},
		pluginNodes: map[types.UID]string{},
		masters:     map[types.UID]bool{},
	}
	defer s.queue.ShutDown()

	factory := informers.NewSharedInformerFactory(client, 0)
	informer := factory.Core().V1().Pods().Informer()
	if err := informer.AddIndexers(cache.Indexers{podsByNodeIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{pod.Spec.NodeName}, nil
	}}); err != nil {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	s.pods = informer.GetIndexer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.podChanged,
		UpdateFunc: func(_, obj any) { s.podChanged(obj) },
		DeleteFunc: s.podDeleted,
	}); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return ctx.Err()
	}
	s.log("device-plugin simulator: following pods")

	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	for s.processNext(ctx) {
	}
	return nil
}

func (s *devicePluginSimulator) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	role, c := nodeFeatureRoleOf(pod)
	if role == roleNFDMaster {
		s.mu.Lock()
		_, was := s.masters[pod.UID]
		if podRunning(pod) {
			s.masters[pod.UID] = masterAllowsNVIDIALabels(c)
		} else {
			delete(s.masters, pod.UID)
		}
		_, is := s.masters[pod.UID]
		s.mu.Unlock()
		if was != is {
			s.requeueAllNodes()
		}
		return
	}
	if _, ok := pluginContainer(pod); !ok && role == roleNone {
		return
	}
	s.mu.Lock()
	s.pluginNodes[pod.UID] = pod.Spec.NodeName
	s.mu.Unlock()
	s.queue.Add(pod.Spec.NodeName)
}

func (s *devicePluginSimulator) podDeleted(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	s.mu.Lock()
	node, known := s.pluginNodes[pod.UID]
	delete(s.pluginNodes, pod.UID)
	delete(s.adverts, pod.UID)
	_, master := s.masters[pod.UID]
	delete(s.masters, pod.UID)
	s.mu.Unlock()
	if known {
		s.queue.Add(node)
	}
	if master {
		s.requeueAllNodes()
	}
}

// requeueAllNodes queues every node that has a pod: an nfd-master came or
// went, which changes what each node's NodeFeature turns into.
func (s *devicePluginSimulator) requeueAllNodes() {
	for _, node := range s.pods.ListIndexFuncValues(podsByNodeIndex) {
		s.queue.Add(node)
	}
}

func (s *devicePluginSimulator) processNext(ctx context.Context) bool {
	node, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(node)
	if err := s.reconcile(ctx, node); err != nil && ctx.Err() == nil {
		s.log("node %s: %v (retrying)", node, err)
		s.queue.AddRateLimited(node)
		return true
	}
	s.queue.Forget(node)
	return true
}

// reconcile labels node as GFD and NFD would (see node_feature_simulator.go),
// then makes it advertise what its running plugin pods register.
func (s *devicePluginSimulator) reconcile(ctx context.Context, nodeName string) error {
	objs, err := s.pods.ByIndex(podsByNodeIndex, nodeName)
	if err != nil {
		return err
	}
	var pods []*corev1.Pod
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok {
			pods = append(pods, pod)
		}
	}
	if err := s.reconcileNodeFeatures(ctx, nodeName, pods); err != nil {
		return err
	}
	running := map[corev1.ResourceName]int64{} // resource -> replicas per GPU
	for _, pod := range pods {
		c, ok := pluginContainer(pod)
		if !ok || pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		adv, err := s.advertisementOf(ctx, pod, c)
		if err != nil {
			return fmt.Errorf("plugin pod %s/%s cannot start: %w", pod.Namespace, pod.Name, err)
		}
		running[adv.resource] = max(running[adv.resource], adv.replicas)
	}

	s.mu.Lock()
	known := maps.Clone(s.advertised[nodeName])
	s.mu.Unlock()
	if len(running) == 0 && len(known) == 0 {
		return nil // never had a plugin: leave the node as registered
	}
	node, err := s.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s.mu.Lock()
		delete(s.advertised, nodeName)
		s.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	gpus := nodeGPUCount(node)

	capacity := map[corev1.ResourceName]string{}
	allocatable := map[corev1.ResourceName]string{}
	for name := range known {
		allocatable[name] = "0"
	}
	for name, replicas := range running {
		if gpus <= 0 {
			continue // the plugin finds no GPU and registers nothing
		}
		n := strconv.FormatInt(gpus*replicas, 10)
		capacity[name], allocatable[name] = n, n
	}
	if !statusDiffers(node, capacity, allocatable) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"capacity": capacity, "allocatable": allocatable}})
	if err != nil {
		return err
	}
	if _, err := s.client.CoreV1().Nodes().PatchStatus(ctx, nodeName, patch); err != nil {
		return fmt.Errorf("patching the node's GPU capacity: %w", err)
	}
	s.mu.Lock()
	if s.advertised[nodeName] == nil {
		s.advertised[nodeName] = map[corev1.ResourceName]bool{}
	}
	for name := range capacity {
		s.advertised[nodeName][name] = true
	}
	s.mu.Unlock()
	s.log("node %s: capacity %v allocatable %v", nodeName, sortedResources(capacity), sortedResources(allocatable))
	return nil
}

// advertisementOf reads a plugin pod's config once, when it is first seen
// running: the real plugin reads it at start and keeps it.
func (s *devicePluginSimulator) advertisementOf(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (advertisement, error) {
	s.mu.Lock()
	adv, ok := s.adverts[pod.UID]
	s.mu.Unlock()
	if ok {
		return adv, nil
	}
	adv, err := advertisementOf(ctx, apiConfigMaps(s.client), pod, c)
	if err != nil {
		return adv, err
	}
	s.mu.Lock()
	s.adverts[pod.UID] = adv
	s.mu.Unlock()
	return adv, nil
}

// statusDiffers reports whether the node's status lacks a value the
// simulator wants.
func statusDiffers(node *corev1.Node, capacity, allocatable map[corev1.ResourceName]string) bool {
	differs := func(list corev1.ResourceList, want map[corev1.ResourceName]string) bool {
		for name, value := range want {
			have, ok := list[name]
			if !ok || have.Cmp(resource.MustParse(value)) != 0 {
				return true
			}
		}
		return false
	}
	return differs(node.Status.Capacity, capacity) || differs(node.Status.Allocatable, allocatable)
}

func sortedResources(m map[corev1.ResourceName]string) string {
	names := slices.Sorted(maps.Keys(m))
	out := ""
	for i, name := range names {
		if i > 0 {
			out += " "
		}
		out += string(name) + "=" + m[name]
	}
	return "{" + out + "}"
}

// nodeGPUCount is how many GPUs a plugin on node finds: GPU Feature
// Discovery's count label, or, on a node without GFD's labels (an EKS
// node group's), its instance type's, as the real plugin finds them
// through the driver whatever the labels.
func nodeGPUCount(node *corev1.Node) int64 {
	if n, err := strconv.ParseInt(node.Labels[gpulabels.Count], 10, 64); err == nil {
		return n
	}
	if it, ok := ec2catalog.Lookup(node.Labels[corev1.LabelInstanceTypeStable]); ok {
		return int64(it.GPUCount)
	}
	return 0
}
