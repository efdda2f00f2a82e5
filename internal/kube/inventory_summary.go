package kube

// Totals sums the nodes of an inventory.
type Totals struct {
	Nodes       int64
	GPUs        int64
	Allocatable int64
	Allocated   int64
	Free        int64
}

// add counts one node into t.
func (t *Totals) add(n GPUNode) {
	t.Nodes++
	t.GPUs += n.Count
	t.Allocatable += n.Allocatable
	t.Allocated += n.Allocated
	t.Free += n.Free
}

// Totals adds up the inventory's nodes.
func (inv Inventory) Totals() Totals {
	var t Totals
	for _, n := range inv.Nodes {
		t.add(n)
	}
	return t
}

// UnknownProduct is the ByProduct key of nodes that have no
// nvidia.com/gpu.product label (GPU Feature Discovery not running there).
const UnknownProduct = "unknown"

// ByProduct adds up the inventory's nodes per GPU product, keyed by the
// product GPU Feature Discovery names (GPUNode.Product), or UnknownProduct.
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
