package kube

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
)

// This file owns when a node has published its devices: NVIDIA's kubelet
// plugin publishes, for its node, one resource pool named after the node
// (driver nvdra.DriverName, spec.nodeName the node), in one or more
// ResourceSlices. A pool is complete when as many slices of its newest
// generation exist as each of them counts (spec.pool.resourceSliceCount),
// as the scheduler reads pools (k8s.io/dynamic-resource-allocation/structured).

// nodePool is what a node's pool of the driver holds now.
type nodePool struct {
	Complete bool
	Devices  int
	// Slices and Want count the slices of the newest generation and how
	// many that generation has; both 0 when there is none.
	Slices, Want int64
}

// describe says what is missing of an incomplete pool.
func (p nodePool) describe() string {
	if p.Want == 0 {
		return "no ResourceSlice of driver " + nvdra.DriverName + " is published for it"
	}
	return fmt.Sprintf("%d of the %d ResourceSlices of its pool's newest generation are published", p.Slices, p.Want)
}

// poolOf reads a node's pool from its slices (those of the driver whose
// pool is named after the node and whose spec.nodeName is the node).
func poolOf(slices map[string]*resourcev1.ResourceSlice) nodePool {
	var gen int64 = -1
	for _, s := range slices {
		gen = max(gen, s.Spec.Pool.Generation)
	}
	var p nodePool
	for _, s := range slices {
		if s.Spec.Pool.Generation != gen {
			continue
		}
		p.Slices++
		p.Want = s.Spec.Pool.ResourceSliceCount
		p.Devices += len(s.Spec.Devices)
	}
	p.Complete = p.Want > 0 && p.Slices == p.Want
	return p
}

// slicePoolNode is the node whose pool slice is part of, or "" when it is
// not a node-local pool of the driver named after its node.
func slicePoolNode(s *resourcev1.ResourceSlice) string {
	if s.Spec.Driver != nvdra.DriverName || s.Spec.NodeName == nil || *s.Spec.NodeName != s.Spec.Pool.Name {
		return ""
	}
	return *s.Spec.NodeName
}

// driverSlicesOnly selects the driver's ResourceSlices on the server.
func driverSlicesOnly(opts *metav1.ListOptions) {
	opts.FieldSelector = fields.OneTermEqualSelector(resourcev1.ResourceSliceSelectorDriver, nvdra.DriverName).String()
}

func resourceSliceLW(client kubernetes.Interface) ListWatchFunctions[*resourcev1.ResourceSliceList] {
	slices := client.ResourceV1().ResourceSlices()
	return ListWatchFunctions[*resourcev1.ResourceSliceList]{List: slices.List, Watch: slices.Watch}
}

// nodeSlices keeps, per node, the driver's slices of its pool.
type nodeSlices map[string]map[string]*resourcev1.ResourceSlice

// observe records a slice (or its deletion) and returns its node, "" for
// a slice that is no node's pool.
func (n nodeSlices) observe(s *resourcev1.ResourceSlice, deleted bool) string {
	node := slicePoolNode(s)
	if node == "" {
		return ""
	}
	if deleted {
		delete(n[node], s.Name)
		return node
	}
	if n[node] == nil {
		n[node] = map[string]*resourcev1.ResourceSlice{}
	}
	n[node][s.Name] = s
	return node
}
