package kube

// Totals sums the nodes of an inventory.
type Totals struct {
	Nodes       int64
	GPUs        int64
	Allocatable int64
	Allocated   int64
	Free        int64
	// Nodes per GPUPath: device plugin only, DRA only, both.
	DevicePluginNodes int64
	DRANodes          int64
	BothPathsNodes    int64
	// DRA and MIG are the nodes' DeviceCounts added up; MIG is nil when no
	// node has DRA MIG devices.
	DRA DeviceCounts
	MIG map[string]DeviceCounts
}

// add counts one node into t.
func (t *Totals) add(n GPUNode) {
	t.Nodes++
	t.GPUs += n.Count
	t.Allocatable += n.Allocatable
	t.Allocated += n.Allocated
	t.Free += n.Free
	switch n.GPUPath {
	case GPUPathDevicePlugin:
		t.DevicePluginNodes++
	case GPUPathDRA:
		t.DRANodes++
	case GPUPathBoth:
		t.BothPathsNodes++
	}
	t.DRA.add(n.DRA)
	for profile, c := range n.MIG {
		if t.MIG == nil {
			t.MIG = map[string]DeviceCounts{}
		}
		sum := t.MIG[profile]
		sum.add(c)
		t.MIG[profile] = sum
	}
}

// Totals adds up the inventory's nodes.
func (inv Inventory) Totals() Totals {
	var t Totals
	for _, n := range inv.Nodes {
		t.add(n)
	}
	return t
}

// UnknownProduct is the ByProduct key of nodes whose product is unknown: no
// nvidia.com/gpu.product label (GPU Feature Discovery not running there) and
// no DRA device naming it.
const UnknownProduct = "unknown"

// ByProduct adds up the inventory's nodes per GPU product, keyed by the
// product GPU Feature Discovery names (GPUNode.Product, which for a DRA node
// without GFD labels is the driver's productName in GFD's spelling), or
// UnknownProduct.
func (inv Inventory) ByProduct() map[string]Totals {
	out := map[string]Totals{}
	for _, n := range inv.Nodes {
		key := n.Product
		if key == "" {
			key = UnknownProduct
		}
		t := out[key]
		t.add(n)
		out[key] = t
	}
	return out
}
