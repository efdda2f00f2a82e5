package kube

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
)

// GPUNode is what the inventory knows about one node with NVIDIA GPUs.
type GPUNode struct {
	Name         string
	InstanceType string
	Product      string
	Family       string
	// GPUPath is how the node offers its GPUs: GPUPathDevicePlugin,
	// GPUPathDRA, GPUPathBoth or GPUPathNone. Count, Allocatable, Allocated
	// and Free are that path's, so a GPU is counted once either way.
	GPUPath string
	// Count is the capacity of nvidia.com/gpu (device plugin) or the whole
	// GPUs the node publishes through DRA (DRA or both).
	Count       int64
	Allocatable int64 // allocatable nvidia.com/gpu, or Count through DRA
	// Allocated is the nvidia.com/gpu requests of the node's non-terminated
	// pods (device plugin), the whole GPUs that ResourceClaims hold (DRA),
	// or both added up (both).
	Allocated int64
	// Free is Allocatable - Allocated, never below zero, less the GPUs the
	// node's health agent reports unhealthy (the rule in
	// inventory_health.go).
	Free int64
	// DRA counts every device NVIDIA's DRA driver publishes for the node,
	// whole GPUs and MIG devices; zero on device-plugin nodes.
	DRA DeviceCounts
	// MIG counts the node's DRA MIG devices by profile ("1g.10gb"); nil
	// when it has none.
	MIG               map[string]DeviceCounts
	MemoryMiB         int64 // per GPU, as GFD reports it
	ComputeCapability string
	DriverVersion     string
	CUDAVersion       string
	MIGStrategy       string
	Ready             bool
	Schedulable       bool
	// Labels are the node's labels that InventoryOptions.Labels keeps; nil
	// when it keeps none.
	Labels map[string]string
	// Health is the node's GPU health as its health agent reports it
	// (gpuhealth.ReadNode); Health.Reported is false when none does.
	Health NodeGPUHealth

	gpuLabels gpuLabelCounts // for the health rule's device-plugin count
}

// Inventory is the GPU nodes of a cluster, sorted by name.
type Inventory struct {
	Nodes []GPUNode
	// DRAServed says whether the cluster serves resource.k8s.io/v1.
	DRAServed bool
	// DRAUnavailable says why DRA devices are not counted: the cluster does
	// not serve resource.k8s.io/v1, or the credentials may not list
	// ResourceSlices or ResourceClaims (counting published devices without
	// their allocations would show taken GPUs free). Every node's GPUs are
	// then the device plugin's. Empty when DRA devices are counted.
	DRAUnavailable string
}

// InventoryOptions narrow what ListInventory asks the API server for.
type InventoryOptions struct {
	// LabelSelector is passed to the node LIST, so the server filters.
	LabelSelector string
	// PageSize is the LIST page size; zero means DefaultPageSize.
	PageSize int64
	// Labels says which node labels GPUNode.Labels keeps; the zero value
	// keeps none.
	Labels LabelKeep
}

// DefaultPageSize keeps a 5,000-node cluster to five node pages.
const DefaultPageSize = 1000

// nonTerminatedBoundPods selects pods that hold resources on a node: bound to
// one and neither Succeeded nor Failed. It is the selector kubectl describe
// node uses for "Allocated resources".
const nonTerminatedBoundPods = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"

// ListInventory reads the cluster's GPU nodes with paginated LISTs of
// NVIDIA's DRA ResourceSlices, nodes, pods and (when some node publishes DRA
// devices) ResourceClaims, whatever the cluster's size: it never makes a
// call per node.
func (c *Cluster) ListInventory(ctx context.Context, opts InventoryOptions) (Inventory, error) {
	client := c.client
	pageSize := opts.PageSize
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	dra, err := listDRADevices(ctx, client, pageSize)
	if err != nil {
		return Inventory{}, err
	}
	nodesByName := map[string]*GPUNode{}
	dpAllocated := map[string]int64{}
	var names []string
	draOnly := map[string]bool{} // nodes listed only for their DRA devices
	err = forEachNode(ctx, client, pageSize, opts.LabelSelector, func(node *corev1.Node) {
		devices := dra.byNode[node.Name]
		n, ok := gpuNodeFrom(node)
		if !ok && len(devices) == 0 {
			return
		}
		if !ok {
			draOnly[n.Name] = true
		}
		n.Labels = opts.Labels.Select(node.Labels)
		nodesByName[n.Name] = &n
		names = append(names, n.Name)
	})
	if err != nil {
		return Inventory{}, err
	}
	if len(names) > 0 {
		err = forEachBoundActivePod(ctx, client, pageSize, func(pod *corev1.Pod) {
			if nodesByName[pod.Spec.NodeName] != nil && !podGPUsThroughDRA(pod) {
				dpAllocated[pod.Spec.NodeName] += podGPURequest(pod)
			}
		})
		if err != nil {
			return Inventory{}, err
		}
	}
	if slices.ContainsFunc(names, func(n string) bool { return len(dra.byNode[n]) > 0 }) {
		if err := dra.markAllocated(ctx, client, pageSize); err != nil {
			return Inventory{}, err
		}
	}
	if dra.unavailable != "" {
		names = slices.DeleteFunc(names, func(n string) bool { return draOnly[n] })
	}
	sort.Strings(names)
	inv := Inventory{Nodes: make([]GPUNode, 0, len(names)), DRAServed: dra.served, DRAUnavailable: dra.unavailable}
	if !dra.served {
		inv.DRAUnavailable = c.draNotServed(ctx)
	}
	for _, name := range names {
		n := nodesByName[name]
		n.settleGPUPath(dra.byNode[name], dpAllocated[name])
		inv.Nodes = append(inv.Nodes, *n)
	}
	return inv, nil
}

// forEachNode calls fn for every node that labelSelector selects, reading
// them in paginated LISTs of pageSize.
func forEachNode(ctx context.Context, client kubernetes.Interface, pageSize int64, labelSelector string, fn func(*corev1.Node)) error {
	return listPages(ctx, pageSize, func(ctx context.Context, lo metav1.ListOptions) (string, error) {
		lo.LabelSelector = labelSelector
		list, err := client.CoreV1().Nodes().List(ctx, lo)
		if err != nil {
			return "", fmt.Errorf("listing nodes: %w", err)
		}
		for i := range list.Items {
			fn(&list.Items[i])
		}
		return list.Continue, nil
	})
}

// forEachBoundActivePod calls fn for every pod that holds resources on a
// node (nonTerminatedBoundPods), reading them in paginated LISTs of pageSize.
func forEachBoundActivePod(ctx context.Context, client kubernetes.Interface, pageSize int64, fn func(*corev1.Pod)) error {
	return listPages(ctx, pageSize, func(ctx context.Context, lo metav1.ListOptions) (string, error) {
		lo.FieldSelector = nonTerminatedBoundPods
		list, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, lo)
		if err != nil {
			return "", fmt.Errorf("listing pods: %w", err)
		}
		for i := range list.Items {
			fn(&list.Items[i])
		}
		return list.Continue, nil
	})
}

// listPages calls list until the server says there is no more.
func listPages(ctx context.Context, pageSize int64, list func(context.Context, metav1.ListOptions) (string, error)) error {
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		next, err := list(ctx, opts)
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		opts.Continue = next
	}
}

// gpuNodeFrom reads a node's GPU facts; ok is false for a node without
// signs of NVIDIA GPUs (neither nvidia.com/gpu capacity nor a GFD/NFD
// presence label), which ListInventory still keeps when it publishes DRA
// devices. It leaves Labels nil: ListInventory keeps those its options ask
// for, and the counts to settleGPUPath.
func gpuNodeFrom(node *corev1.Node) (GPUNode, bool) {
	labels := node.Labels
	capacity := quantity(node.Status.Capacity, ResourceGPU)
	present := labels[gpulabels.Present] == "true" || labels[gpulabels.NFDPCIPresent] == "true"
	n := GPUNode{
		Name:          node.Name,
		InstanceType:  labels[gpulabels.InstanceType],
		Product:       labels[gpulabels.Product],
		Family:        labels[gpulabels.Family],
		Count:         capacity,
		Allocatable:   quantity(node.Status.Allocatable, ResourceGPU),
		MemoryMiB:     labelInt(labels, gpulabels.Memory),
		DriverVersion: labels[gpulabels.DriverVersionFull],
		CUDAVersion:   labels[gpulabels.RuntimeVersionFull],
		MIGStrategy:   labels[gpulabels.MIGStrategy],
		Ready:         nodeReady(node),
		Schedulable:   !node.Spec.Unschedulable,
		Health:        gpuhealth.ReadNode(node),
		gpuLabels:     gpuLabelCounts{physical: labelInt(labels, gpulabels.Count), replicas: labelInt(labels, gpulabels.Replicas)},
	}
	if major, minor := labels[gpulabels.ComputeMajor], labels[gpulabels.ComputeMinor]; major != "" && minor != "" {
		n.ComputeCapability = major + "." + minor
	}
	return n, capacity > 0 || present
}

func quantity(list corev1.ResourceList, name corev1.ResourceName) int64 {
	q, ok := list[name]
	if !ok {
		return 0
	}
	return q.Value()
}

func labelInt(labels map[string]string, key string) int64 {
	v, err := strconv.ParseInt(labels[key], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
