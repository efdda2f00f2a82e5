package kube

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// DRADriverLive is a DRA driver deployment as the cluster has it: the spec
// that would produce it, and how far it is from ready.
type DRADriverLive struct {
	Spec   DRADriverSpec
	Status DRADriverStatus
}

// DRADriverStatus counts the nodes the kubelet plugin runs on and what
// they published.
type DRADriverStatus struct {
	DesiredNodes int64 // nodes the DaemonSet wants a pod on
	ReadyNodes   int64 // nodes whose plugin pod is ready
	// PublishedNodes are the nodes running a plugin pod whose resource
	// pool is complete, and Devices the devices in those pools.
	PublishedNodes int64
	Devices        int64
	// DevicePluginNodes are nodes running the kubelet plugin that also
	// advertise allocatable nvidia.com/gpu: a device plugin hands out the
	// same GPUs there.
	DevicePluginNodes []string
}

// ReadDRADriver reads the deployment namespace/name; found is false when
// its kubelet plugin DaemonSet does not exist. Spec.Owner is the
// DaemonSet's AnnotationOwner; Spec.DeviceClasses are the chart's
// DeviceClasses that exist and that owner owns.
func (c *Cluster) ReadDRADriver(ctx context.Context, namespace, name string, owner Ownership) (DRADriverLive, bool, error) {
	return found(c.readDRADriver(ctx, namespace, name, owner))
}

func (c *Cluster) readDRADriver(ctx context.Context, namespace, name string, owner Ownership) (*DRADriverLive, error) {
	live := &DRADriverLive{}
	s := &live.Spec
	s.Namespace, s.Name = namespace, name
	ds, err := getDaemonSet(ctx, c.client, namespace, s.DaemonSetName())
	if err != nil || ds == nil {
		return nil, err
	}
	s.Owner = ds.Annotations[AnnotationOwner]
	pod := ds.Spec.Template.Spec
	if ctr := containerNamed(pod.Containers, draGPUsContainer); ctr != nil {
		s.Image, s.ImagePullPolicy = ctr.Image, ctr.ImagePullPolicy
		s.DriverRoot = envValue(ctr.Env, draEnvDriverRoot)
		s.LogVerbosity, _ = strconv.Atoi(envValue(ctr.Env, draEnvLogVerbosity))
		s.FeatureGates = parseFeatureGates(envValue(ctr.Env, draEnvFeatureGates))
	}
	s.NodeSelector = pod.NodeSelector
	s.Tolerations = pod.Tolerations
	s.PriorityClassName = pod.PriorityClassName
	s.GPUNodeAffinity = hasDRAGPUNodeAffinity(pod.Affinity)
	for _, class := range DRADeviceClasses {
		dc, err := c.client.ResourceV1().DeviceClasses().Get(ctx, class, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading DeviceClass %s: %w", class, err)
		case !owner.owns(dc) || dc.DeletionTimestamp != nil:
			continue
		}
		s.DeviceClasses = append(s.DeviceClasses, class)
		if class == nvdra.DeviceClassGPU && dc.Spec.ExtendedResourceName != nil {
			s.ExtendedResourceName = *dc.Spec.ExtendedResourceName
		}
	}
	live.Status, err = draDriverStatus(ctx, c.client, ds)
	return live, err
}

func envValue(env []corev1.EnvVar, name string) string {
	i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == name })
	if i < 0 {
		return ""
	}
	return env[i].Value
}

// hasDRAGPUNodeAffinity reports whether affinity is exactly the chart's
// (draGPUNodeSelector).
func hasDRAGPUNodeAffinity(affinity *corev1.Affinity) bool {
	if affinity == nil || affinity.NodeAffinity == nil {
		return false
	}
	want, err := asObject[corev1.NodeSelector](draGPUNodeSelector())
	return err == nil && equality.Semantic.DeepEqual(affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, want)
}

// draDriverStatus counts ds's nodes, the pools they published and the
// devices in them.
func draDriverStatus(ctx context.Context, client kubernetes.Interface, ds *appsv1.DaemonSet) (DRADriverStatus, error) {
	status := DRADriverStatus{DesiredNodes: int64(ds.Status.DesiredNumberScheduled), ReadyNodes: int64(ds.Status.NumberReady)}
	nodes, err := pluginNodes(ctx, client, ds)
	if err != nil || len(nodes) == 0 {
		return status, err
	}
	opts := metav1.ListOptions{}
	driverSlicesOnly(&opts)
	list, err := client.ResourceV1().ResourceSlices().List(ctx, opts)
	if err != nil {
		return status, fmt.Errorf("listing the ResourceSlices of driver %s: %w", nvdra.DriverName, err)
	}
	byNode := nodeSlices{}
	for i := range list.Items {
		byNode.observe(&list.Items[i], false)
	}
	for node := range nodes {
		if p := poolOf(byNode[node]); p.Complete {
			status.PublishedNodes++
			status.Devices += int64(p.Devices)
		}
	}
	nodeList, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return status, fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range nodeList.Items {
		if q := n.Status.Allocatable[gpulabels.ResourceName]; nodes[n.Name] && !q.IsZero() {
			status.DevicePluginNodes = append(status.DevicePluginNodes, n.Name)
		}
	}
	slices.Sort(status.DevicePluginNodes)
	return status, nil
}

// DRADriverStatusOf counts the nodes and devices of the deployment spec.
func (c *Cluster) DRADriverStatusOf(ctx context.Context, spec DRADriverSpec) (DRADriverStatus, error) {
	ds, err := c.client.AppsV1().DaemonSets(spec.Namespace).Get(ctx, spec.DaemonSetName(), metav1.GetOptions{})
	if err != nil {
		return DRADriverStatus{}, fmt.Errorf("reading DaemonSet %s/%s: %w", spec.Namespace, spec.DaemonSetName(), err)
	}
	return draDriverStatus(ctx, c.client, ds)
}
