package pveemu

import (
	"fmt"
	"slices"
	"strings"
)

// Out-of-band changes to a node's hardware, for the drift tests: a card
// pulled or moved to another slot, as the node's /sys would show it after
// a reboot. Running VMs keep what they were given.

// cardFunctions are the indexes of the functions address names on n: a
// function ("0000:41:00.0") or a whole card ("0000:41:00").
func (n *hostNode) cardFunctions(address string) []int {
	address = normalizePCIID(address)
	var out []int
	for i, f := range n.PCI {
		if f.ID == address || (!strings.Contains(address, ".") && strings.HasPrefix(f.ID, address+".")) {
			out = append(out, i)
		}
	}
	return out
}

// hardwareNode runs change on node's hardware under e.mu, or the test
// control of that name on an emulator that runs as a process of its own.
func (e *Emulator) hardwareNode(control string, args controlArgs, change func(n *hostNode) error) error {
	if e.remote() {
		return e.control(control, args, nil)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.st.node(args.Node)
	if n == nil {
		return fmt.Errorf("node %s does not exist", args.Node)
	}
	return change(n)
}

// RemovePCIDevice pulls a card (address without a function) or one
// function out of node: it vanishes from /nodes/{node}/hardware/pci, and
// a mapping of it fails assert_valid ("pci device '...' not found").
func (e *Emulator) RemovePCIDevice(node, address string) error {
	return e.hardwareNode("remove-pci-device", controlArgs{Node: node, Address: address}, func(n *hostNode) error {
		idx := n.cardFunctions(address)
		if len(idx) == 0 {
			return fmt.Errorf("no PCI device %s on node %s", address, node)
		}
		n.PCI = slices.Delete(slices.Clone(n.PCI), idx[0], idx[len(idx)-1]+1)
		return nil
	})
}

// RestorePCIDevice puts a card (or function) back where node's host
// profile has it, as it was at the emulator's start, its IOMMU group
// included: the undo of RemovePCIDevice and of MovePCIDevice there and
// back, so a drift test leaves the testbed as it found it. A card moved
// elsewhere and not back stays there as well.
func (e *Emulator) RestorePCIDevice(node, address string) error {
	return e.hardwareNode("restore-pci-device", controlArgs{Node: node, Address: address}, func(n *hostNode) error {
		var profile *hostNode
		for _, p := range hostProfiles() {
			if p.Name == node {
				profile = &p
			}
		}
		if profile == nil {
			return fmt.Errorf("node %s has no host profile", node)
		}
		idx := profile.cardFunctions(address)
		if len(idx) == 0 {
			return fmt.Errorf("node %s's profile has no PCI device %s", node, address)
		}
		pci := slices.Clone(n.PCI)
		if present := n.cardFunctions(address); len(present) > 0 {
			pci = slices.Delete(pci, present[0], present[len(present)-1]+1)
		}
		for _, i := range idx {
			pci = append(pci, profile.PCI[i])
		}
		slices.SortStableFunc(pci, func(a, b pciFunction) int { return strings.Compare(a.ID, b.ID) })
		n.PCI = pci
		return nil
	})
}

// MovePCIDevice moves a card (or function) from one address to another
// on node ("0000:41:00" -> "0000:81:00"): the same hardware, its
// functions renumbered on the new bus and slot, in a new IOMMU group (one
// above the node's highest: IOMMU groups are numbered as the kernel finds
// them at boot, so a card moved back is in a new group too).
func (e *Emulator) MovePCIDevice(node, from, to string) error {
	return e.hardwareNode("move-pci-device", controlArgs{Node: node, From: from, To: to}, func(n *hostNode) error {
		idx := n.cardFunctions(from)
		if len(idx) == 0 {
			return fmt.Errorf("no PCI device %s on node %s", from, node)
		}
		if len(n.cardFunctions(to)) > 0 {
			return fmt.Errorf("address %s on node %s is taken", to, node)
		}
		if strings.Contains(from, ".") != strings.Contains(to, ".") || !pciIDPattern.MatchString(to) {
			return fmt.Errorf("move %s to an address of the same form, not %q", from, to)
		}
		group := 0
		for _, f := range n.PCI {
			group = max(group, f.IOMMUGroup)
		}
		group++
		from, to = normalizePCIID(from), normalizePCIID(to)
		pci := slices.Clone(n.PCI)
		for _, i := range idx {
			if strings.Contains(to, ".") {
				pci[i].ID = to
			} else {
				pci[i].ID = to + strings.TrimPrefix(pci[i].ID, from)
			}
			pci[i].IOMMUGroup = group
		}
		slices.SortStableFunc(pci, func(a, b pciFunction) int { return strings.Compare(a.ID, b.ID) })
		n.PCI = pci
		return nil
	})
}

// Mapping is the map lines of the cluster PCI mapping id as PVE stores
// them; false if there is no such mapping.
func (e *Emulator) Mapping(id string) ([]string, bool) {
	if e.remote() {
		var out struct {
			Entries []string `json:"entries"`
			Found   bool     `json:"found"`
		}
		e.mustControl("mapping", controlArgs{ID: id}, &out)
		return out.Entries, out.Found
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.st.mapping(id)
	if m == nil {
		return nil, false
	}
	return slices.Clone(m.Map), true
}
