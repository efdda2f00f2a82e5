package pveemu

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The hostpci devices at VM start, as qemu-server 9.1's
// PVE/QemuServer/PCI.pm (parse_hostpci, parse_hostpci_devices,
// choose_hostpci_devices, reserve_pci_usage) and vm_start_nolock in
// PVE/QemuServer.pm (the reservation and mdev creation) do it.

// maxHostPCI is PCI.pm's $MAX_HOSTPCI_DEVICES.
const maxHostPCI = 16

// vmDevice is what a running VM got for one hostpciN: the PCI functions
// passed through, or for an mdev the device its instance was created on.
type vmDevice struct {
	functions  []string
	mdevType   string
	mdevDevice string
	// hw is the hardware as it was at start, by function ID.
	hw map[string]pciFunction
	// migration: print_hostpci_devices adds enable-migration=on.
	migration bool
}

// startDevice is one parsed hostpciN: its alternatives (one per mapping
// entry on the node, each a list of functions; one for host=).
type startDevice struct {
	index        int
	alternatives [][]string
	mdev         string
	pcie         bool
	// migration: the mapping is live-migration-capable (parse_hostpci).
	migration bool
}

// startDevices is parse_hostpci_devices: each hostpciN parsed, a
// mapping's entries on this node checked with assert_valid, the
// functions behind each path listed, the q35 check.
func (s *state) startDevices(v *vm) ([]startDevice, error) {
	q35 := isQ35(v.conf)
	node := s.node(v.node)
	var out []startDevice
	for i := range maxHostPCI {
		opt := "hostpci" + strconv.Itoa(i)
		value, ok := v.conf[opt]
		if !ok || value == "" {
			continue
		}
		h, err := parseHostPCI(value)
		if err != nil {
			return nil, fmt.Errorf("unable to parse value of '%s' - %v", opt, err)
		}
		var paths [][]string
		switch {
		case h.host != "" && h.mapping != "":
			return nil, die("Cannot set both 'host' and 'mapping'.\n")
		case h.mapping != "":
			m := s.mapping(h.mapping)
			var entries []mappingEntry
			if m != nil {
				entries = m.onNode(v.node)
			}
			if len(entries) == 0 {
				return nil, die("PCI device mapping not found for '%s'\n", h.mapping)
			}
			for _, e := range entries {
				if msg := assertValid(h.mapping, e, m, node); msg != "" {
					return nil, die("PCI device mapping invalid (hardware probably changed): %s\n\n", msg)
				}
				paths = append(paths, strings.Split(e.Path, ";"))
			}
		case h.host != "":
			paths = append(paths, strings.Split(h.host, ";"))
		default:
			return nil, die("Either 'host' or 'mapping' must be set.\n")
		}
		d := startDevice{index: i, mdev: h.mdev, pcie: h.pcie}
		if m := s.mapping(h.mapping); m != nil {
			d.migration = m.liveMigration()
		}
		for _, alt := range paths {
			var ids []string
			for _, id := range alt {
				found := node.lspci(id)
				if len(found) == 0 {
					return nil, die("no PCI device found for '%s'\n", id)
				}
				ids = append(ids, found...)
			}
			if len(ids) > 1 && h.mdev != "" {
				return nil, die("cannot use mediated device with multifunction device\n")
			}
			d.alternatives = append(d.alternatives, ids)
		}
		// PCI.pm dies without a newline here, so Perl appends the place.
		if !q35 && h.pcie {
			return nil, die("q35 machine model is not enabled at /usr/share/perl5/PVE/QemuServer/PCI.pm line 514.\n")
		}
		out = append(out, d)
	}
	return out, nil
}

// lspci is PVE::SysFSTools::lspci with a filter: the functions whose ID
// starts with it (the default domain added).
func (n *hostNode) lspci(id string) []string {
	id = normalizePCIID(id)
	var out []string
	for _, f := range n.PCI {
		if f.ID == id || (!strings.Contains(id, ".") && strings.HasPrefix(f.ID, id+".")) {
			out = append(out, f.ID)
		}
	}
	return out
}

// heldBy is the running VM other than v that holds function f on v's
// node (reserve_pci_usage's check against running VMs), nil if none.
func (s *state) heldBy(v *vm, f string) *vm {
	for _, id := range slices.Sorted(maps.Keys(s.vms)) {
		other := s.vms[id]
		if other == v || other.status != "running" || other.node != v.node {
			continue
		}
		for _, d := range other.devices {
			if slices.Contains(d.functions, f) {
				return other
			}
		}
	}
	return nil
}

// mdevAvailable is how many instances of typ the device has left: its
// total less those running VMs (and extra, this start's earlier picks)
// hold; NVIDIA's time-sliced vGPU takes one type per GPU, so another
// type in use leaves none.
func (s *state) mdevAvailable(node, device string, t mdevType, extra ...*vmDevice) int {
	used := 0
	var held []*vmDevice
	for _, v := range s.vms {
		if v.node == node && v.status == "running" {
			for _, d := range v.devices {
				held = append(held, d)
			}
		}
	}
	for _, d := range append(held, extra...) {
		if d.mdevDevice != device {
			continue
		}
		if d.mdevType != t.Type {
			return 0
		}
		used++
	}
	return max(t.Instances-used, 0)
}

// startChecks is vm_start's part that can fail for passthrough:
// parse_hostpci_devices, choose_hostpci_devices (the first alternative
// neither this VM's earlier hostpci nor a running VM uses, else "could
// not find a free device"), reserve_pci_usage for the chosen functions,
// mdev creation on the first alternative with a free instance, and OVMF
// without an EFI disk (OVMF.pm warns). It returns what the VM gets.
func (s *state) startChecks(v *vm, l taskLog) (map[int]*vmDevice, error) {
	devices, err := s.startDevices(v)
	if err != nil {
		return nil, err
	}
	if v.conf["bios"] == "ovmf" && v.conf["efidisk0"] == "" {
		l.warn("no efidisk configured! Using temporary efivars disk.")
	}
	got := map[int]*vmDevice{}
	used := map[string]bool{}
	use := func(ids []string) error {
		for _, id := range ids {
			if used[id] {
				return die("device '%s' assigned more than once\n", id)
			}
			used[id] = true
		}
		return nil
	}
	for _, d := range devices {
		switch {
		case d.mdev != "":
			continue // chosen when the mdev is created
		case len(d.alternatives) == 1:
			if err := use(d.alternatives[0]); err != nil {
				return nil, err
			}
			got[d.index] = &vmDevice{functions: d.alternatives[0]}
			continue
		}
		for _, alt := range d.alternatives {
			if slices.ContainsFunc(alt, func(f string) bool { return used[f] || s.heldBy(v, f) != nil }) {
				continue
			}
			_ = use(alt)
			got[d.index] = &vmDevice{functions: alt}
			break
		}
		if got[d.index] == nil {
			return nil, die("could not find a free device for 'hostpci%d'\n", d.index)
		}
	}
	// reserve_pci_usage of every chosen function
	for _, d := range devices {
		if g := got[d.index]; g != nil {
			for _, f := range g.functions {
				if other := s.heldBy(v, f); other != nil {
					return nil, die("PCI device '%s' already in use by VMID '%d'\n", f, other.vmid)
				}
			}
		}
	}
	// mdevs, in the order of the sorted option names
	slices.SortFunc(devices, func(a, b startDevice) int {
		return strings.Compare("hostpci"+strconv.Itoa(a.index), "hostpci"+strconv.Itoa(b.index))
	})
	node := s.node(v.node)
	var created []*vmDevice
	for _, d := range devices {
		if d.mdev == "" {
			continue
		}
		for _, alt := range d.alternatives {
			dev := alt[0]
			if msg := s.createMdev(node, dev, d.mdev, created); msg != "" {
				l.printf("%s", msg)
				continue
			}
			got[d.index] = &vmDevice{mdevType: d.mdev, mdevDevice: dev}
			created = append(created, got[d.index])
			break
		}
		if got[d.index] == nil {
			return nil, die("could not create mediated device\n")
		}
	}
	for _, d := range devices {
		got[d.index].migration = d.migration
	}
	for _, d := range got {
		d.hw = map[string]pciFunction{}
		for _, f := range append(slices.Clone(d.functions), d.mdevDevice) {
			if fn := node.function(f); fn != nil {
				d.hw[f] = *fn
			}
		}
	}
	return got, nil
}

// createMdev is PVE::SysFSTools::pci_create_mdev_device's checks: "" if
// an instance of typ can be created on dev, else its message.
func (s *state) createMdev(node *hostNode, dev, typ string, created []*vmDevice) string {
	fn := node.function(dev)
	if fn == nil || len(fn.Mdev) == 0 {
		return fmt.Sprintf("pci device '%s' does not support mediated devices ", dev)
	}
	i := slices.IndexFunc(fn.Mdev, func(t mdevType) bool { return t.Type == typ })
	if i < 0 {
		return fmt.Sprintf("pci device '%s' has no type '%s'", dev, typ)
	}
	if s.mdevAvailable(node.Name, dev, fn.Mdev[i], created...) < 1 {
		return fmt.Sprintf("pci device '%s' has no available instances of '%s'", dev, typ)
	}
	return ""
}
