package k8s

import (
	"context"
	"fmt"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// The DRA driver simulator stands in for NVIDIA's gpu-kubelet-plugin
// (kubernetes-sigs/dra-driver-nvidia-gpu, nvdra.DriverVersion), which kwok
// cannot run. When the plugin's pod (isDRAKubeletPlugin: a container named
// "gpus" on the chart's k8s-dra-driver-gpu image or a mirror of it, as
// templates/kubeletplugin.yaml lays it out) is Running on a node, it
// publishes the ResourceSlices the plugin publishes when it starts
// (driver.go, NewDriver): one pool named after the node, one slice, a
// device per GPU of the node's instance type, or per MIG device for GPUs
// in MIG mode (NodeSpec.MIGDevices), built by internal/nvdra exactly as
// deviceinfo.go builds them. It publishes through the same code the plugin
// does, k8s.io/dynamic-resource-allocation's resourceslice controller with
// the Node as owner, so slice names, owner references, nodeName and the
// pool's generation and resourceSliceCount are what the kubelet-plugin
// helper writes. When the node's last plugin pod stops running or goes
// away, it deletes the node's slices of the driver, as the kubelet does
// when a plugin unregisters. The real kube-scheduler allocates from them.
//
// The node's facts are read once, when a plugin pod is first seen running
// (the plugin enumerates its GPUs at start): a changed MIG layout shows
// after the pod is replaced. It follows pods with an informer (list +
// watch, no polling).
//
// What it does not reproduce:
//   - NodePrepareResources and NodeUnprepareResources: kwok starts a pod
//     whose claims are allocated without asking a plugin, nothing is
//     prepared, and no CDI spec is written or device injected;
//   - device health (v25.8's health checks, republishing without
//     unhealthy devices) and the opaque configs of claims (time-slicing,
//     MPS, their validation);
//   - the ComputeDomain plugin and controller;
//   - the 30 s the kubelet waits before wiping an unregistered plugin's
//     slices: it deletes them at once, so a restarted plugin publishes a
//     new slice of generation 1 where the real one updates the old slice
//     and bumps its generation; nor the kubelet wiping every driver's
//     slices when it restarts;
//   - a GPU's real PCIe topology: bus IDs and roots are synthesized, one
//     root per GPU; UUIDs are hashed from the node's name;
//   - dynamic MIG and the partitionable-device layout of v25.12's alpha
//     DynamicMIG gate;
//   - the order of devices in the slice: the plugin's is Go map order,
//     here it is by minor number;
//   - a plugin that dies with its node: when a node is deleted under a
//     running plugin pod, its controller goes on recreating the slice the
//     garbage collector removes (every 30 s, the controller's sync delay)
//     until the pod is garbage-collected too.

// draDriverSimulator reconciles the nodes plugin pods run on.
type draDriverSimulator struct {
	ctx    context.Context
	client kubernetes.Interface
	agents *nodeAgentPods

	mu         sync.Mutex
	publishers map[string]*slicePublisher // per node with a running plugin
}

// slicePublisher is one plugin process's ResourceSlice controller.
type slicePublisher struct {
	pod        types.UID // the plugin pod it stands for
	controller *resourceslice.Controller
}

// draSimulatorWorkers is how many nodes are reconciled at once: starting a
// slice controller waits for its informer to sync, polling each second.
// With 64, 200 DRA nodes had published 3.5 s after their plugin pods ran
// (8 took 23 s more).
const draSimulatorWorkers = 64

// RunDRADriverSimulator simulates NVIDIA's DRA kubelet plugin on the
// cluster behind client until ctx ends (see the comment above
// draDriverSimulator). Each change it makes is logged to log.
func RunDRADriverSimulator(ctx context.Context, client kubernetes.Interface, log io.Writer) error {
	s := &draDriverSimulator{
		ctx:        ctx,
		client:     client,
		agents:     newNodeAgentPods("DRA driver simulator", log, isDRAKubeletPlugin),
		publishers: map[string]*slicePublisher{},
	}
	defer s.stopAll()
	return s.agents.run(ctx, client, draSimulatorWorkers, s.reconcile)
}

// reconcile publishes node's slices while a plugin pod runs there, and
// deletes them once none does.
func (s *draDriverSimulator) reconcile(ctx context.Context, nodeName string) error {
	running, err := s.runningPlugin(nodeName)
	if err != nil {
		return err
	}
	s.mu.Lock()
	current := s.publishers[nodeName]
	s.mu.Unlock()

	if running == nil {
		if current == nil {
			return nil
		}
		current.controller.Stop() // stopping twice, after a failed wipe, is harmless
		if err := s.wipeSlices(ctx, nodeName); err != nil {
			return err
		}
		s.setPublisher(nodeName, nil)
		return nil
	}
	if current != nil && current.pod == running.UID {
		return nil // this plugin has published already
	}

	node, err := s.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // its slices go with it: the Node owns them
	}
	if err != nil {
		return err
	}
	devices, err := draNodeDevices(node)
	if err != nil {
		// The real plugin fails at start and crash-loops; nothing is published.
		s.agents.log("node %s: plugin pod %s/%s finds no GPUs it can publish: %v", nodeName, running.Namespace, running.Name, err)
		return nil
	}
	resources := &resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		nodeName: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}
	if current != nil {
		// A restarted plugin publishes anew; the controller it starts
		// takes over the slices its predecessor left.
		current.controller.Stop()
		s.setPublisher(nodeName, nil)
	}
	controller, err := resourceslice.StartController(s.ctx, resourceslice.Options{
		DriverName: nvdra.DriverName,
		KubeClient: s.client,
		Owner:      &resourceslice.Owner{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID},
		Resources:  resources,
		ErrorHandler: func(_ context.Context, err error, msg string) {
			s.agents.log("node %s: %s: %v", nodeName, msg, err)
		},
	})
	if err != nil {
		return fmt.Errorf("starting the ResourceSlice controller: %w", err)
	}
	s.setPublisher(nodeName, &slicePublisher{pod: running.UID, controller: controller})
	s.agents.log("node %s: plugin pod %s/%s publishes %d devices", nodeName, running.Namespace, running.Name, len(devices))
	return nil
}

// runningPlugin is a plugin pod Running on node, if any: the one already
// publishing when it still runs, else the oldest.
func (s *draDriverSimulator) runningPlugin(nodeName string) (*corev1.Pod, error) {
	pods, err := s.agents.agentPodsOn(nodeName)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	current := s.publishers[nodeName]
	s.mu.Unlock()
	var found *corev1.Pod
	for _, pod := range pods {
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		if current != nil && pod.UID == current.pod {
			return pod, nil
		}
		if found == nil || pod.CreationTimestamp.Before(&found.CreationTimestamp) {
			found = pod
		}
	}
	return found, nil
}

func (s *draDriverSimulator) setPublisher(nodeName string, p *slicePublisher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p == nil {
		delete(s.publishers, nodeName)
		return
	}
	s.publishers[nodeName] = p
}

// wipeSlices deletes the driver's slices of node, as the kubelet does when
// the plugin unregisters (pkg/kubelet/cm/dra/plugin, wipeResourceSlices).
func (s *draDriverSimulator) wipeSlices(ctx context.Context, nodeName string) error {
	selector := fields.Set{
		resourceapi.ResourceSliceSelectorNodeName: nodeName,
		resourceapi.ResourceSliceSelectorDriver:   nvdra.DriverName,
	}.String()
	if err := s.client.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: selector}); err != nil {
		return fmt.Errorf("deleting the node's ResourceSlices: %w", err)
	}
	s.agents.log("node %s: no plugin pod runs: ResourceSlices deleted", nodeName)
	return nil
}

// stopAll stops every slice controller; the slices stay, as when the
// plugins' pods outlive the simulator.
func (s *draDriverSimulator) stopAll() {
	s.mu.Lock()
	publishers := s.publishers
	s.publishers = map[string]*slicePublisher{}
	s.mu.Unlock()
	for _, p := range publishers {
		p.controller.Stop()
	}
}
