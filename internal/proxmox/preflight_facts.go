package proxmox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// NVIDIAVendorID is NVIDIA's PCI vendor ID as PVE reports it.
const NVIDIAVendorID = "0x10de"

// Display controller subclasses a GPU has: VGA (0x0300) and 3D (0x0302).
const (
	PCIClassVGA = "0x0300"
	PCIClass3D  = "0x0302"
)

// NodeFacts is what Proxmox VE says about one node and the cluster that a
// VM's GPUs on that node depend on: read by ReadNodeFacts for Preflight,
// or filled in part by a caller that needs only the PCI functions and
// mappings to resolve hostpci lines.
type NodeFacts struct {
	Node      string
	Identity  Identity
	Functions []PCIFunction
	Mappings  []PCIMapping
	Guests    []Guest
	// Mdev is the mdev types per function address, read for GPUs with mdev.
	Mdev map[string][]MdevType
	// MappingUse says, per mapping a GPU names, whether the client's
	// identity has Mapping.Use on it; read unless it is root@pam.
	MappingUse map[string]bool
}

// ReadNodeFacts reads what Preflight needs to check gpus on node: the
// node's PCI functions, the cluster's mappings and VMs, the devices the
// running VMs using a pool on the node got (ReadHostDevices), the
// client's Mapping.Use on each mapping named (unless root@pam), and the
// mdev types of each GPU asking for one (of every entry of its mapping on
// the node).
func (c *Client) ReadNodeFacts(ctx context.Context, node string, gpus []GPU) (*NodeFacts, error) {
	facts := &NodeFacts{Node: node, Identity: c.Identity(), Mdev: map[string][]MdevType{}}
	var err error
	if facts.Functions, err = c.PCIFunctions(ctx, node); err != nil {
		return nil, fmt.Errorf("reading the PCI devices of node %s (/nodes/%s/hardware/pci): %w", node, node, err)
	}
	if facts.Mappings, err = c.PCIMappings(ctx); err != nil {
		return nil, fmt.Errorf("reading the cluster's PCI mappings (/cluster/mapping/pci): %w", err)
	}
	if facts.Guests, err = c.Guests(ctx); err != nil {
		return nil, fmt.Errorf("reading the cluster's VMs (/cluster/resources): %w", err)
	}
	for _, g := range gpus {
		if _, read := facts.MappingUse[g.Mapping]; g.Mapping == "" || facts.Identity.IsRootPam() || read {
			continue
		}
		if facts.MappingUse == nil {
			facts.MappingUse = map[string]bool{}
		}
		perms, err := c.Permissions(ctx, "/mapping/pci/"+g.Mapping)
		if err != nil {
			return nil, fmt.Errorf("reading the client's permissions on /mapping/pci/%s: %w", g.Mapping, err)
		}
		_, facts.MappingUse[g.Mapping] = perms["Mapping.Use"]
	}
	if err := c.ReadHostDevices(ctx, facts); err != nil {
		return nil, err
	}
	for _, g := range gpus {
		if g.Mdev == "" {
			continue
		}
		for _, address := range facts.gpuFunctions(g, node) {
			if _, done := facts.Mdev[address]; done {
				continue
			}
			if _, ok := facts.Function(address); !ok {
				continue // Preflight reports the address or the mapping
			}
			types, err := c.MdevTypes(ctx, node, address)
			if err != nil {
				return nil, fmt.Errorf("reading the vGPU (mdev) types of %s on node %s: %w", address, node, err)
			}
			facts.Mdev[address] = types
		}
	}
	return facts, nil
}

// ReadHostDevices fills the HostDevices of the running guests on
// facts.Node that use a pool there (a mapping with more than one entry on
// the node, passed whole) from each one's QEMU monitor (VMHostDevices):
// which entry each got is in no config. A guest whose monitor the client
// may not read (a *PermissionError: Sys.Audit on /vms/<vmid> is missing)
// (logged at debug level), or that stopped or went away meanwhile (the
// monitor's "ERROR: ...", a missing config) keeps HostDevices nil: unknown,
// which Pool and Preflight say.
func (c *Client) ReadHostDevices(ctx context.Context, facts *NodeFacts) error {
	for i, g := range facts.Guests {
		if g.Node != facts.Node || g.Status != "running" || g.HostDevices != nil || !facts.UsesPool(g) {
			continue
		}
		devices, err := c.VMHostDevices(ctx, g.Node, g.VMID)
		var pe *PermissionError
		var me *MonitorError
		switch {
		case errors.As(err, &pe):
			tflog.Debug(ctx, "the QEMU monitor of a VM on a GPU pool is not readable: which device it got stays unknown",
				map[string]any{"vmid": g.VMID, "node": g.Node, "path": pe.Path, "privileges": pe.Privileges})
			continue
		case errors.As(err, &me), IsNotFound(err):
			continue // stopped or gone since the listing
		case err != nil:
			return err
		}
		facts.Guests[i].HostDevices = devices
	}
	return nil
}

// UsesPool says whether g passes a pool of f.Node whole.
func (f *NodeFacts) UsesPool(g Guest) bool {
	for _, value := range g.HostPCI {
		gpu, err := ParseHostPCI(value)
		if err == nil && gpu.Mapping != "" && gpu.Mdev == "" && f.IsPool(gpu.Mapping, f.Node) {
			return true
		}
	}
	return false
}

// Function is the PCI function at address ("0000:01:00.0") on the node.
func (f *NodeFacts) Function(address string) (PCIFunction, bool) {
	address = NormalizePCIAddress(address)
	for _, fn := range f.Functions {
		if NormalizePCIAddress(fn.Address) == address {
			return fn, true
		}
	}
	return PCIFunction{}, false
}

// DeviceFunctions are the functions a host address (or a ';' list of
// them) passes: the one named, or every function of a device given
// without one; in address order.
func (f *NodeFacts) DeviceFunctions(addresses string) []PCIFunction {
	var out []PCIFunction
	for _, fn := range f.Functions {
		if PCIListCovers(addresses, fn.Address) {
			out = append(out, fn)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// Mapping is the cluster mapping id.
func (f *NodeFacts) Mapping(id string) (PCIMapping, bool) {
	for _, m := range f.Mappings {
		if m.ID == id {
			return m, true
		}
	}
	return PCIMapping{}, false
}

// MappingEntry is mapping id's first entry on node: its only one, except
// in a pool (EntriesOn has them all).
func (f *NodeFacts) MappingEntry(id, node string) (PCIMappingEntry, bool) {
	m, ok := f.Mapping(id)
	if !ok {
		return PCIMappingEntry{}, false
	}
	for _, e := range m.Entries {
		if e.Node == node {
			return e, true
		}
	}
	return PCIMappingEntry{}, false
}

// Holder is a guest passing one of a set of functions through whole, and
// its hostpci line that does.
type Holder struct {
	Guest Guest
	// Line is "hostpci0: mapping=a6000-1,pcie=1,rombar=1".
	Line string
	// Device is the host function the line got when the monitor said
	// (Guest.HostDevices), else "".
	Device string
}

// GPUFunction is the host function that is g's GPU on node: the first
// address g passes there (its mapping's entry, which needs f, or its own
// address), function 0 of a device given whole; "" when unknown, which a
// pool's is (which entry a VM gets is chosen at its start: see
// GuestGPUFunction). f may be nil.
func (f *NodeFacts) GPUFunction(g GPU, node string) string {
	addresses := g.PCIAddress
	if g.Mapping != "" {
		if f == nil {
			return ""
		}
		m, _ := f.Mapping(g.Mapping)
		entries := m.EntriesOn(node)
		if len(entries) != 1 {
			return ""
		}
		addresses = entries[0].Path
	}
	first, _, _ := strings.Cut(addresses, ";")
	return PrimaryFunction(NormalizePCIAddress(first))
}

// GuestGPUFunction is the host function guest vmid's hostpciN (index)
// passes on node: the device the QEMU monitor reported
// (Guest.HostDevices), else GPUFunction of its line; "" when unknown.
func (f *NodeFacts) GuestGPUFunction(node string, vmid, index int) string {
	for _, g := range f.Guests {
		if g.Node != node || g.VMID != vmid {
			continue
		}
		if device, ok := g.HostDevices[index]; ok {
			return device
		}
		if gpu, err := ParseHostPCI(g.HostPCI[index]); err == nil {
			return f.GPUFunction(gpu, node)
		}
	}
	return ""
}

// gpuFunctions are the host functions g may get on node: GPUFunction, or
// for a mapping the primary function of each entry there, in order.
func (f *NodeFacts) gpuFunctions(g GPU, node string) []string {
	if g.Mapping == "" {
		return []string{f.GPUFunction(g, node)}
	}
	m, _ := f.Mapping(g.Mapping)
	var out []string
	for _, e := range m.EntriesOn(node) {
		first, _, _ := strings.Cut(e.Path, ";")
		out = append(out, PrimaryFunction(NormalizePCIAddress(first)))
	}
	return out
}

// HeldBy finds a guest on node that passes one of functions through whole
// (a vGPU instance holds no device) and is running, or any guest when
// running is false, passing over those except says are not to count (the
// VM itself; except may be nil); the lowest hostpci index of the first
// such guest. A guest using a pool holds the entry its monitor reported
// (Guest.HostDevices); when that was not read, the guest is not counted
// (Pool says which guests may hold an entry).
func (f *NodeFacts) HeldBy(node string, functions []PCIFunction, running bool, except func(Guest) bool) (Holder, bool) {
	for _, g := range f.Guests {
		if g.Node != node || (running && g.Status != "running") || (except != nil && except(g)) {
			continue
		}
		for _, p := range f.guestPassed(g, node) {
			if !p.known {
				continue
			}
			for _, fn := range functions {
				if PCIListCovers(p.addresses, fn.Address) {
					return p.holder, true
				}
			}
		}
	}
	return Holder{}, false
}

// IsNVIDIAGPU says whether fn is an NVIDIA display or 3D controller.
func IsNVIDIAGPU(fn PCIFunction) bool {
	class := strings.ToLower(fn.Class)
	return strings.EqualFold(fn.VendorID, NVIDIAVendorID) && (strings.HasPrefix(class, PCIClassVGA) || strings.HasPrefix(class, PCIClass3D))
}

// Describe is "0000:01:00.1 (NVIDIA Corporation GA102 High Definition Audio Controller, class 0x040300)".
func (fn PCIFunction) Describe() string {
	name := strings.TrimSpace(fn.VendorName + " " + fn.DeviceName)
	if name == "" {
		name = fn.VendorID + ":" + fn.DeviceID
	}
	return fmt.Sprintf("%s (%s, class %s)", fn.Address, name, fn.Class)
}

// NVIDIAGPUs lists the node's NVIDIA GPU functions, for messages: "it has
// 0000:01:00.0, 0000:02:00.0" or "it has none".
func (f *NodeFacts) NVIDIAGPUs() string {
	var out []string
	for _, fn := range f.Functions {
		if IsNVIDIAGPU(fn) {
			out = append(out, fn.Address)
		}
	}
	if len(out) == 0 {
		return "it has none"
	}
	sort.Strings(out)
	return "it has " + strings.Join(out, ", ")
}

// MappingIDs lists the cluster's mappings, for messages: "it has a6000-0,
// a6000-1" or "it has none".
func (f *NodeFacts) MappingIDs() string {
	if len(f.Mappings) == 0 {
		return "it has none"
	}
	ids := make([]string, len(f.Mappings))
	for i, m := range f.Mappings {
		ids[i] = m.ID
	}
	sort.Strings(ids)
	return "it has " + strings.Join(ids, ", ")
}

// Nodes lists where m maps devices, for messages: "pve-a6000 (0000:01:00)".
func (m PCIMapping) Nodes() string {
	var nodes []string
	for _, e := range m.Entries {
		nodes = append(nodes, e.Node+" ("+e.Path+")")
	}
	if len(nodes) == 0 {
		return "no node"
	}
	return strings.Join(nodes, ", ")
}
