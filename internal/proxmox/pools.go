package proxmox

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// GPU pools: a mapping with several entries on one node. Each entry is one
// alternative; a VM starting with the mapping gets the first entry whose
// devices no running VM holds, and fails to start with "could not find a
// free device for 'hostpci<N>'" when there is none (qemu-server
// PVE/QemuServer/PCI.pm parse_hostpci and choose_hostpci_devices). Which
// entry a running VM got is in no config: the QEMU monitor says
// (VMHostDevices), and ReadNodeFacts reads it into Guest.HostDevices for
// the running guests that use a pool on the node. A vGPU (mdev) holds no
// device: its instances share the card.

// PoolDevice is one entry of a pool on a node and who holds it.
type PoolDevice struct {
	Entry PCIMappingEntry
	// Holder is the running guest holding the entry's devices (through
	// this mapping, another, or a raw address); nil when free as far as
	// the facts tell.
	Holder *Holder
	// Maybe are running guests that use the mapping on the node but whose
	// device is unknown (their monitor was not read): with Holder nil,
	// the entry is free unless one of them has it.
	Maybe []Holder
}

// Pool is mapping mappingID's entries on node, in the mapping's order (the
// order PVE tries them), each with the running guest that holds it. It
// needs the HostDevices of the running guests using a pool there (as
// ReadNodeFacts reads them); without them those guests are each entry's
// Maybe. nil when the mapping is unknown or has no entry on node.
func (f *NodeFacts) Pool(mappingID, node string) []PoolDevice {
	m, ok := f.Mapping(mappingID)
	if !ok {
		return nil
	}
	var out []PoolDevice
	var maybe []Holder
	for _, g := range f.Guests {
		if g.Node != node || g.Status != "running" {
			continue
		}
		for _, p := range f.guestPassed(g, node) {
			if !p.known && p.gpu.Mapping == mappingID {
				maybe = append(maybe, p.holder)
			}
		}
	}
	for _, e := range m.EntriesOn(node) {
		d := PoolDevice{Entry: e}
		if h, ok := f.holderOf(node, e.Path, nil); ok {
			d.Holder = &h
		} else {
			d.Maybe = maybe
		}
		out = append(out, d)
	}
	return out
}

// IsPool says whether mapping id has more than one entry on node.
func (f *NodeFacts) IsPool(id, node string) bool {
	m, ok := f.Mapping(id)
	return ok && len(m.EntriesOn(node)) > 1
}

// passed is one hostpci line of a guest that passes devices whole.
type passed struct {
	gpu    GPU
	holder Holder
	// addresses are the host addresses it passes (a ';' list), when known.
	addresses string
	known     bool
}

// guestPassed are the hostpci lines of g that pass devices whole on node
// (not vGPUs, not mappings f does not know or that have no entry there),
// in index order, each with the addresses it passes when known: a raw
// address; a mapping's entry on node when it has one entry there; for a
// pool, the entry covering the device the monitor reported
// (g.HostDevices), or unknown.
func (f *NodeFacts) guestPassed(g Guest, node string) []passed {
	var out []passed
	for _, i := range slices.Sorted(maps.Keys(g.HostPCI)) {
		value := g.HostPCI[i]
		gpu, err := ParseHostPCI(value)
		if err != nil || gpu.Mdev != "" {
			continue
		}
		p := passed{gpu: gpu, holder: Holder{Guest: g, Line: fmt.Sprintf("hostpci%d: %s", i, value)}}
		device, got := g.HostDevices[i]
		if got {
			p.holder.Device = device
		}
		switch {
		case gpu.Mapping == "":
			p.addresses, p.known = gpu.PCIAddress, true
		case f == nil:
			continue
		default:
			m, ok := f.Mapping(gpu.Mapping)
			if !ok {
				continue
			}
			entries := m.EntriesOn(node)
			switch {
			case len(entries) == 0:
				continue
			case got:
				p.addresses, p.known = device, true
				for _, e := range entries {
					if PCIListCovers(e.Path, device) {
						p.addresses = e.Path
						break
					}
				}
			case len(entries) == 1:
				p.addresses, p.known = entries[0].Path, true
			}
		}
		out = append(out, p)
	}
	return out
}

// holderOf finds the first running guest on node (passing over those
// except says are not to count; except may be nil) whose known devices
// overlap the address list addresses.
func (f *NodeFacts) holderOf(node, addresses string, except func(Guest) bool) (Holder, bool) {
	for _, g := range f.Guests {
		if g.Node != node || g.Status != "running" || (except != nil && except(g)) {
			continue
		}
		for _, p := range f.guestPassed(g, node) {
			if p.known && pciListsOverlap(p.addresses, addresses) {
				return p.holder, true
			}
		}
	}
	return Holder{}, false
}

// pciListsOverlap says whether two ';' lists of addresses share a
// function (a whole device covers each of its functions).
func pciListsOverlap(a, b string) bool {
	for _, x := range splitPCIList(a) {
		for _, y := range splitPCIList(b) {
			if PCICovers(x, y) || PCICovers(y, x) {
				return true
			}
		}
	}
	return false
}

// DescribeHolders is "VM 101 (train), VM 102 (infer)", for messages.
func DescribeHolders(holders []Holder) string {
	out := make([]string, len(holders))
	for i, h := range holders {
		out[i] = fmt.Sprintf("VM %d (%s)", h.Guest.VMID, h.Guest.Name)
		if h.Device != "" {
			out[i] += " on " + h.Device
		}
	}
	return strings.Join(out, ", ")
}
