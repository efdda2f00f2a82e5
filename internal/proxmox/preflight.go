package proxmox

import (
	"fmt"
	"sort"
	"strings"
)

// FindingKind is what a preflight finding says Proxmox VE would refuse or
// break.
type FindingKind int

// What Preflight finds. Each names the field at fault; the Finding's
// other fields carry the facts a message needs.
const (
	// FindingMappingNoUse: the client lacks Mapping.Use on Mapping.ID
	// (qemu-server refuses the VM's configuration).
	FindingMappingNoUse FindingKind = iota + 1
	// FindingMappingNotFound: the cluster has no mapping of that ID.
	FindingMappingNotFound
	// FindingMappingNotOnNode: Mapping has no entry on the node.
	FindingMappingNotOnNode
	// FindingMappingNotMdev: a vGPU through Mapping, which is not marked
	// for mediated devices.
	FindingMappingNotMdev
	// FindingMappingNoDevice: Mapping's entry on the node (Path) names
	// no device the node has.
	FindingMappingNoDevice
	// FindingRawAddressNeedsRoot: only root@pam with a password may pass
	// a raw host address ("only root can set 'hostpciN' config for
	// non-mapped devices").
	FindingRawAddressNeedsRoot
	// FindingNoSuchDevice: the node has no device at the address.
	FindingNoSuchDevice
	// FindingNotNVIDIAGPU: Function is not an NVIDIA display or 3D
	// controller.
	FindingNotNVIDIAGPU
	// FindingPassedTwice: the device (Device) is passed by GPU Other
	// already.
	FindingPassedTwice
	// FindingGPUHeld: Holder, a running VM, has the device passed
	// through; PVE would fail this VM's start ("PCI device ... already in
	// use by VMID ...").
	FindingGPUHeld
	// FindingIOMMUOff: the node reports no IOMMU group for Function.
	FindingIOMMUOff
	// FindingGroupNotWhole: IOMMU group Group holds Passed, which the VM
	// would get, and Left, which it would not.
	FindingGroupNotWhole
	// FindingNoSuchMdevType: Function offers no mdev type of that name
	// (Offered are the types it has).
	FindingNoSuchMdevType
	// FindingMdevTypeUsedUp: Function has no instance of the mdev type
	// left.
	FindingMdevTypeUsedUp
	// FindingVMIDInUse: the VM ID to create is Holder's.
	FindingVMIDInUse
	// FindingPoolExhausted: every entry of pool Mapping on the node is
	// held by a running VM other than this one (Holders; with those whose
	// device the monitor did not tell); PVE would fail the start ("could
	// not find a free device for 'hostpciN'").
	FindingPoolExhausted
	// FindingMappingInvalid: Mapping's entry at Path fails PVE's check
	// against the node's hardware (PCIMapping.Check); Problem is PVE's
	// message. qemu-server refuses the start ("PCI device mapping invalid
	// (hardware probably changed): " + Problem).
	FindingMappingInvalid
)

// Finding is one thing Proxmox VE would refuse or break if the VM were
// created or changed as specified.
type Finding struct {
	Kind  FindingKind
	Field Field
	// The facts behind it, as its kind says.
	Mapping  PCIMapping
	Path     string // a mapping's entry path on the node
	Function PCIFunction
	Device   string // "0000:01:00"
	Other    int    // the index of the GPU passing Device already
	Holder   Holder
	Group    int
	Passed   []string
	Left     []PCIFunction
	Offered  []MdevType
	Holders  []Holder // FindingPoolExhausted
	Problem  string   // FindingMappingInvalid
}

// Conflict says whether the finding is about another VM (what it holds,
// its VM ID) rather than about the node or the spec: something that the
// same apply, or anyone, may change before the VM is created.
func (f Finding) Conflict() bool {
	switch f.Kind {
	case FindingGPUHeld, FindingMdevTypeUsedUp, FindingVMIDInUse, FindingPoolExhausted:
		return true
	}
	return false
}

// PreflightVM is the VM a preflight is for.
type PreflightVM struct {
	Node string
	// VMID is the VM's ID when it exists (an update), else 0.
	VMID int
	// NewVMID is the ID a VM to be created asks for; 0 for the next free one.
	NewVMID int
	// OwnName, when set, makes a VM of that name on Node count as the VM
	// itself, never as a conflict: a planned create may replace the VM's
	// own predecessor (a tainted VM, deleted before its replacement is
	// created), which holds its GPUs and its VM ID until then.
	OwnName string
}

// Own says whether guest g is the VM itself: its VM ID, or a VM called
// OwnName on Node.
func (vm PreflightVM) Own(g Guest) bool {
	return g.Node == vm.Node && ((vm.VMID != 0 && g.VMID == vm.VMID) || (vm.OwnName != "" && g.Name == vm.OwnName))
}

// Preflight checks gpus, the VM's hostpci0..N, and its VM ID against facts
// of vm.Node: everything Proxmox VE would refuse when the VM is configured
// or fail when it starts, as far as the facts tell. It reads nothing.
func Preflight(vm PreflightVM, gpus []GPU, facts *NodeFacts) []Finding {
	var out []Finding
	if vm.VMID == 0 && vm.NewVMID != 0 {
		for _, g := range facts.Guests {
			if g.VMID == vm.NewVMID && !vm.Own(g) {
				out = append(out, Finding{Kind: FindingVMIDInUse, Field: Field{Kind: FieldVMID}, Holder: Holder{Guest: g}})
			}
		}
	}
	return append(out, preflightGPUs(vm, gpus, facts)...)
}

// preflightGPUs checks each GPU, then the IOMMU groups they bring.
func preflightGPUs(vm PreflightVM, gpus []GPU, facts *NodeFacts) []Finding {
	var out []Finding
	passed := map[string]bool{}     // every function the VM gets
	groupOf := map[int][]string{}   // IOMMU group -> functions the VM gets from it
	groupBy := map[int]Field{}      // IOMMU group -> the field that brings it
	firstDevice := map[string]int{} // device -> index of the GPU passing it
	poolTaken := map[string]int{}   // pool -> entries this VM's earlier GPUs take
	for i, g := range gpus {
		field := gpuAddressField(g, i)
		finding := func(kind FindingKind) Finding { return Finding{Kind: kind, Field: field} }
		var functions []PCIFunction
		pooled := false
		if g.Mapping != "" {
			f, entries, ok := checkMapping(vm, g, finding, facts)
			if !ok {
				out = append(out, f)
				continue
			}
			entry := entries[0]
			if pooled = len(entries) > 1 && g.Mdev == ""; pooled {
				free, holders := poolFree(vm, g.Mapping, facts)
				taken := poolTaken[g.Mapping]
				poolTaken[g.Mapping]++
				if taken >= len(free) {
					f := finding(FindingPoolExhausted)
					f.Mapping, f.Holders = facts.mapping(g.Mapping), holders
					out = append(out, f)
					continue
				}
				entry = free[taken]
			}
			functions = facts.DeviceFunctions(entry.Path)
		} else {
			if !facts.Identity.IsRootPam() {
				out = append(out, finding(FindingRawAddressNeedsRoot))
			}
			address := g.PCIAddress
			if g.AllFunctions {
				address = PCIDevice(address)
			}
			if functions = facts.DeviceFunctions(address); len(functions) == 0 {
				out = append(out, finding(FindingNoSuchDevice))
				continue
			}
		}
		gpu := functions[0]
		if g.PCIAddress != "" && PCIHasFunction(g.PCIAddress) {
			gpu, _ = facts.Function(g.PCIAddress)
		}
		if !IsNVIDIAGPU(gpu) {
			f := finding(FindingNotNVIDIAGPU)
			f.Function = gpu
			out = append(out, f)
			continue
		}
		device := PCIDevice(NormalizePCIAddress(gpu.Address))
		if j, dup := firstDevice[device]; dup && g.Mdev == "" {
			f := finding(FindingPassedTwice)
			f.Device, f.Other = device, j
			out = append(out, f)
			continue
		}
		firstDevice[device] = i

		if g.Mdev != "" {
			if f, ok := checkMdev(g.Mdev, mdevCandidates(g, gpu, vm.Node, facts), facts); !ok {
				f.Field = GPUField(FieldGPUMdev, i)
				out = append(out, f)
			}
			continue // vGPU instances share the device: no IOMMU group or exclusive use to check
		}
		if holder, ok := facts.HeldBy(vm.Node, functions, true, vm.Own); ok && !pooled {
			f := finding(FindingGPUHeld)
			f.Device, f.Function, f.Holder = device, gpu, holder
			out = append(out, f)
			continue
		}
		for _, fn := range functions {
			passed[NormalizePCIAddress(fn.Address)] = true
			if fn.IOMMUGroup < 0 {
				f := finding(FindingIOMMUOff)
				f.Function = fn
				out = append(out, f)
				break
			}
			groupOf[fn.IOMMUGroup] = append(groupOf[fn.IOMMUGroup], fn.Address)
			if _, ok := groupBy[fn.IOMMUGroup]; !ok {
				groupBy[fn.IOMMUGroup] = field
			}
		}
	}
	groups := make([]int, 0, len(groupOf))
	for g := range groupOf {
		groups = append(groups, g)
	}
	sort.Ints(groups)
	for _, group := range groups {
		var left []PCIFunction
		for _, fn := range facts.Functions {
			if fn.IOMMUGroup == group && !passed[NormalizePCIAddress(fn.Address)] {
				left = append(left, fn)
			}
		}
		if len(left) > 0 {
			out = append(out, Finding{Kind: FindingGroupNotWhole, Field: groupBy[group], Group: group, Passed: groupOf[group], Left: left})
		}
	}
	return out
}

// checkMapping checks a GPU passed by mapping: the client may use it, it
// exists with an entry on the node (marked for mdev when the GPU is a
// vGPU), and each entry there names devices the node has and passes PVE's
// check (PCIMapping.Check, which qemu-server makes of every entry on the
// node before the VM starts: PVE/QemuServer/PCI.pm parse_hostpci). It
// returns the entries.
func checkMapping(vm PreflightVM, g GPU, finding func(FindingKind) Finding, facts *NodeFacts) (Finding, []PCIMappingEntry, bool) {
	if use, checked := facts.MappingUse[g.Mapping]; checked && !use {
		return finding(FindingMappingNoUse), nil, false
	}
	m, ok := facts.Mapping(g.Mapping)
	if !ok {
		return finding(FindingMappingNotFound), nil, false
	}
	f := finding(0)
	f.Mapping = m
	entries := m.EntriesOn(vm.Node)
	if len(entries) == 0 {
		f.Kind = FindingMappingNotOnNode
		return f, nil, false
	}
	if g.Mdev != "" && !m.Mdev {
		f.Kind = FindingMappingNotMdev
		return f, nil, false
	}
	for _, e := range entries {
		if len(facts.DeviceFunctions(e.Path)) == 0 {
			f.Kind, f.Path = FindingMappingNoDevice, e.Path
			return f, nil, false
		}
		if problem := m.Check(e, facts.Functions); problem != "" {
			f.Kind, f.Path, f.Problem = FindingMappingInvalid, e.Path, problem
			return f, nil, false
		}
	}
	return Finding{}, entries, true
}

// mapping is mapping id, or one with only the ID.
func (f *NodeFacts) mapping(id string) PCIMapping {
	if m, ok := f.Mapping(id); ok {
		return m
	}
	return PCIMapping{ID: id}
}

// poolFree are the entries of pool id on vm's node that no running VM
// but vm holds, in order, less as many as the running VMs using the pool
// whose device is unknown; and the VMs holding the others (those unknown
// last).
func poolFree(vm PreflightVM, id string, facts *NodeFacts) ([]PCIMappingEntry, []Holder) {
	var free []PCIMappingEntry
	var holders, unknown []Holder
	for _, d := range facts.Pool(id, vm.Node) {
		if h, ok := facts.holderOf(vm.Node, d.Entry.Path, vm.Own); ok {
			holders = append(holders, h)
			continue
		}
		free = append(free, d.Entry)
		if unknown == nil {
			for _, h := range d.Maybe {
				if !vm.Own(h.Guest) {
					unknown = append(unknown, h)
				}
			}
		}
	}
	holders = append(holders, unknown...)
	if len(unknown) >= len(free) {
		return nil, holders
	}
	return free[:len(free)-len(unknown)], holders
}

// mdevCandidates are the functions a vGPU of g may be created on: gpu, or
// for a mapping each entry's primary function on node, in order (the mdev
// goes to the first with an instance of the type left).
func mdevCandidates(g GPU, gpu PCIFunction, node string, facts *NodeFacts) []PCIFunction {
	if g.Mapping == "" {
		return []PCIFunction{gpu}
	}
	var out []PCIFunction
	for _, address := range facts.gpuFunctions(g, node) {
		if fn, ok := facts.Function(address); ok {
			out = append(out, fn)
		}
	}
	if len(out) == 0 {
		return []PCIFunction{gpu}
	}
	return out
}

// checkMdev checks that the vGPU type mdev exists on one of candidates
// with an instance left; a finding names the first candidate offering it
// (or the first one).
func checkMdev(mdev string, candidates []PCIFunction, facts *NodeFacts) (Finding, bool) {
	var offering *PCIFunction
	for i, gpu := range candidates {
		for _, t := range facts.Mdev[NormalizePCIAddress(gpu.Address)] {
			if t.Type != mdev {
				continue
			}
			if t.Available > 0 {
				return Finding{}, true
			}
			if offering == nil {
				offering = &candidates[i]
			}
		}
	}
	if offering != nil {
		return Finding{Kind: FindingMdevTypeUsedUp, Function: *offering, Offered: facts.Mdev[NormalizePCIAddress(offering.Address)]}, false
	}
	gpu := candidates[0]
	return Finding{Kind: FindingNoSuchMdevType, Function: gpu, Offered: facts.Mdev[NormalizePCIAddress(gpu.Address)]}, false
}

// DescribeMdevTypes is "nvidia-1155 (NVIDIA L40S-4Q, 12 left), ...", for messages.
func DescribeMdevTypes(types []MdevType) string {
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = fmt.Sprintf("%s (%s, %d left)", t.Type, t.Name, t.Available)
	}
	return strings.Join(out, ", ")
}
