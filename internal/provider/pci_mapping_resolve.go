package provider

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// This file turns gpu_pci_mapping's `select` or `device` blocks into the
// mapping's entries, from the nodes' hardware, and checks them as PVE
// would at a VM's start (PVE::Mapping::PCI::assert_valid in
// pve-guest-common, called by qemu-server's PCI.pm parse_hostpci) and as
// the provider's rules ask: each device is an NVIDIA GPU, its IOMMU group
// goes whole, no other passthrough mapping has it. It reads nothing: the
// caller hands it the hardware (ModifyPlan, and Create when the plan could
// not know).

// mappingHardware is what the resolution reads: the cluster's nodes, the
// PCI functions of the online nodes it concerns, and the cluster's other
// mappings. A node whose functions were not read (offline) keeps the
// entries the state has there: nothing can be checked.
type mappingHardware struct {
	nodes     []string
	functions map[string][]proxmox.PCIFunction
	others    []proxmox.PCIMapping
	// exists says whether the cluster has a mapping of the request's name.
	exists bool
}

// priorOn are the entries of prior on node, kept as they are.
func priorOn(prior []proxmox.PCIMappingEntry, node string, at path.Path) []resolvedEntry {
	var out []resolvedEntry
	for _, e := range prior {
		if e.Node == node {
			out = append(out, resolvedEntry{PCIMappingEntry: e, at: at, kept: true})
		}
	}
	return out
}

// mappingDevice is one `device` block.
type mappingDevice struct{ node, address string }

// mappingRequest is what the configuration asks for.
type mappingRequest struct {
	name string
	// mdev is the configuration's mdev when mdevSet; else it follows the
	// devices (resolveMapping sets it).
	mdev, mdevSet bool
	// selected is true with a select block of product on nodes (nil: every node).
	selected bool
	product  string
	nodes    []string
	devices  []mappingDevice
	// prior are the entries in the state, which tell a moved card by its IDs.
	prior []proxmox.PCIMappingEntry
}

// resolvedEntry is one entry of the mapping, with the product of its device.
type resolvedEntry struct {
	proxmox.PCIMappingEntry
	product string
	// at is the attribute that asked for it (select.product or device[i].address).
	at path.Path
	// kept marks an entry of an offline node, kept from the state unchecked.
	kept bool
}

// productMatcher is a select block's product: a regular expression between
// slashes, else a case-insensitive substring.
func productMatcher(product string) (func(string) bool, error) {
	if len(product) > 2 && strings.HasPrefix(product, "/") && strings.HasSuffix(product, "/") {
		re, err := regexp.Compile(product[1 : len(product)-1])
		if err != nil {
			return nil, err
		}
		return re.MatchString, nil
	}
	want := strings.ToLower(product)
	return func(name string) bool { return strings.Contains(strings.ToLower(name), want) }, nil
}

var (
	selectProductPath = path.Root("select").AtListIndex(0).AtName("product")
	selectNodesPath   = path.Root("select").AtListIndex(0).AtName("nodes")
)

func devicePath(i int, attr string) path.Path { return path.Root("device").AtListIndex(i).AtName(attr) }

// resolveMapping is the mapping's entries for req on hw, and its mdev
// flag (the configuration's, or the devices' vGPU capability), with an
// error (or a warning, for an overlap with a vGPU mapping) for each check
// it fails.
func resolveMapping(req mappingRequest, hw mappingHardware) ([]resolvedEntry, bool, diag.Diagnostics) {
	var entries []resolvedEntry
	var diags diag.Diagnostics
	if req.selected {
		entries, diags = resolveSelect(req, hw)
	} else {
		entries, diags = resolveDevices(req, hw)
	}
	if diags.HasError() {
		return nil, req.mdev, diags
	}
	if !req.mdevSet {
		mdev, d := mdevOfDevices(entries, hw)
		if d != nil {
			diags.Append(d)
			return nil, false, diags
		}
		req.mdev = mdev
	}
	mdevReported := false
	for _, e := range entries {
		if e.kept {
			continue
		}
		fns := functionsOf(hw.functions[e.Node], e.Path)
		if !req.mdev {
			diags.Append(groupWhole(e, fns, hw.functions[e.Node])...)
		}
		if !mdevReported {
			if d := mdevMismatch(req, e, fns); d != nil {
				diags.Append(d)
				mdevReported = true
			}
		}
		diags.Append(overlaps(req, e, func(other string) bool {
			return slices.ContainsFunc(fns, func(fn proxmox.PCIFunction) bool { return proxmox.PCIListCovers(other, fn.Address) })
		}, hw.others)...)
	}
	return entries, req.mdev, diags
}

// mdevOfDevices is the mdev flag PVE requires of a mapping of entries'
// devices: whether they offer mediated devices (vGPU); an error on mdev
// when some do and some do not, which no one mapping can hold.
func mdevOfDevices(entries []resolvedEntry, hw mappingHardware) (bool, diag.Diagnostic) {
	var capable, not []string
	for _, e := range entries {
		if e.kept {
			continue
		}
		for _, p := range strings.Split(e.Path, ";") {
			fn := functionAt(hw.functions[e.Node], proxmox.PrimaryFunction(p))
			name := e.Node + " " + fn.Address
			if fn.MdevCapable {
				capable = append(capable, name)
			} else {
				not = append(not, name)
			}
		}
	}
	if len(capable) > 0 && len(not) > 0 {
		return false, diag.NewAttributeErrorDiagnostic(pathMdev, "vGPU and passthrough-only devices in one mapping", fmt.Sprintf(
			"PVE requires a mapping's mdev flag to match every device (assert_valid: \"'mdev' does not match\"), and these offer "+
				"mediated devices (vGPU): %s, while these do not: %s. Map them in two mappings (select.nodes, a narrower product, or "+
				"device blocks)", strings.Join(capable, ", "), strings.Join(not, ", ")))
	}
	return len(capable) > 0, nil
}

// resolveSelect maps every NVIDIA GPU whose product matches, whole, on
// the nodes asked for (every node of the cluster without); a node not
// read (offline) keeps the entries the state has there.
func resolveSelect(req mappingRequest, hw mappingHardware) ([]resolvedEntry, diag.Diagnostics) {
	var diags diag.Diagnostics
	match, err := productMatcher(req.product)
	if err != nil {
		diags.AddAttributeError(selectProductPath, "Invalid product", fmt.Sprintf("select.product %q: %s", req.product, err))
		return nil, diags
	}
	nodes := req.nodes
	if len(nodes) == 0 {
		// Every node, not only those online: an offline node keeps its
		// entries (priorOn), which a mapping written without them would
		// take from its VMs.
		nodes = hw.nodes
	}
	for _, n := range nodes {
		if !slices.Contains(hw.nodes, n) {
			diags.AddAttributeError(selectNodesPath, "No such node", fmt.Sprintf("select.nodes names %q, which is not a node of the "+
				"cluster; its nodes are %s", n, strings.Join(hw.nodes, ", ")))
		}
	}
	if diags.HasError() {
		return nil, diags
	}
	var entries []resolvedEntry
	for _, node := range nodes {
		if _, read := hw.functions[node]; !read {
			entries = append(entries, priorOn(req.prior, node, selectProductPath)...)
			continue
		}
		seen := map[string]bool{}
		for _, fn := range hw.functions[node] {
			device := proxmox.PCIDevice(fn.Address)
			if !proxmox.IsNVIDIAGPU(fn) || !match(fn.DeviceName) || seen[device] {
				continue
			}
			seen[device] = true
			e := proxmox.EntryForDevice(node, functionsOf(hw.functions[node], device), true)
			entries = append(entries, resolvedEntry{PCIMappingEntry: e, product: fn.DeviceName, at: selectProductPath})
		}
	}
	if len(entries) == 0 {
		diags.AddAttributeError(selectProductPath, "No GPU matches", fmt.Sprintf("select.product %q matches no NVIDIA GPU on %s. "+
			"The NVIDIA GPUs there: %s. Use a product they have (a part of its name, or /regex/), or other nodes",
			req.product, strings.Join(nodes, ", "), nvidiaGPUsOn(nodes, hw)))
	}
	return entries, diags
}

// resolveDevices maps each device block's device.
func resolveDevices(req mappingRequest, hw mappingHardware) ([]resolvedEntry, diag.Diagnostics) {
	var diags diag.Diagnostics
	var entries []resolvedEntry
	devices := map[string]int{} // node + device -> the block naming it first
	for i, d := range req.devices {
		if !slices.Contains(hw.nodes, d.node) {
			diags.AddAttributeError(devicePath(i, "node"), "No such node", fmt.Sprintf("device[%d].node %q is not a node of the "+
				"cluster; its nodes are %s", i, d.node, strings.Join(hw.nodes, ", ")))
			continue
		}
		all, read := hw.functions[d.node]
		if !read {
			kept := slices.DeleteFunc(priorOn(req.prior, d.node, devicePath(i, "address")), func(e resolvedEntry) bool {
				return proxmox.NormalizePCIAddress(e.Path) != d.address
			})
			if len(kept) == 0 {
				diags.AddAttributeError(devicePath(i, "node"), "Node offline", fmt.Sprintf("device[%d].node %q is not online, so "+
					"its device cannot be checked: apply when it is back, or leave the block out until then", i, d.node))
			}
			entries = append(entries, kept...)
			continue
		}
		fns := functionsOf(all, d.address)
		if len(fns) == 0 {
			diags.AddAttributeError(devicePath(i, "address"), "PCI device gone", goneDetail(i, d, req.prior, all, req.devices))
			continue
		}
		gpu := fns[0]
		if proxmox.PCIHasFunction(d.address) {
			gpu = functionAt(all, d.address)
		}
		if !proxmox.IsNVIDIAGPU(gpu) {
			diags.AddAttributeError(devicePath(i, "address"), "Not an NVIDIA GPU", fmt.Sprintf("device[%d].address %q on node %s is "+
				"%s, not an NVIDIA display or 3D controller (vendor %s, class %s or %s). Map the GPU's own function or the whole "+
				"device; the node's NVIDIA GPUs: %s", i, d.address, d.node, gpu.Describe(), proxmox.NVIDIAVendorID, proxmox.PCIClassVGA,
				proxmox.PCIClass3D, nvidiaGPUsOn([]string{d.node}, hw)))
			continue
		}
		key := d.node + " " + proxmox.PCIDevice(gpu.Address)
		if j, dup := devices[key]; dup {
			diags.AddAttributeError(devicePath(i, "address"), "Device mapped twice", fmt.Sprintf("device[%d] maps %s on node %s, "+
				"which device[%d] maps already: remove one", i, proxmox.PCIDevice(gpu.Address), d.node, j))
			continue
		}
		devices[key] = i
		e := proxmox.EntryForDevice(d.node, fns, !proxmox.PCIHasFunction(d.address))
		entries = append(entries, resolvedEntry{PCIMappingEntry: e, product: gpu.DeviceName, at: devicePath(i, "address")})
	}
	return entries, diags
}

// goneDetail says that device block i's device is not on its node, and
// where the same card (vendor, device and subsystem IDs of the entry in
// the state) is now when it is there once, not mapped by another block.
func goneDetail(i int, d mappingDevice, prior []proxmox.PCIMappingEntry, all []proxmox.PCIFunction, blocks []mappingDevice) string {
	text := fmt.Sprintf("device[%d]: node %s has no PCI device at %s: the card is gone (pulled, or moved to another slot).", i, d.node, d.address)
	var was *proxmox.PCIMappingEntry
	for j := range prior {
		if prior[j].Node == d.node && proxmox.NormalizePCIAddress(prior[j].Path) == proxmox.NormalizePCIAddress(d.address) {
			was = &prior[j]
		}
	}
	var candidates []string
	if was != nil {
		for _, fn := range all {
			if !proxmox.IsNVIDIAGPU(fn) {
				continue
			}
			if ids := proxmox.EntryForDevice(d.node, []proxmox.PCIFunction{fn}, false); ids.ID != was.ID || ids.SubsystemID != was.SubsystemID {
				continue
			}
			taken := slices.ContainsFunc(blocks, func(b mappingDevice) bool {
				return b.node == d.node && proxmox.PCICovers(b.address, fn.Address)
			})
			if !taken {
				candidates = append(candidates, fn.Address)
			}
		}
	}
	if len(candidates) == 1 {
		address := candidates[0]
		if !proxmox.PCIHasFunction(d.address) {
			address = proxmox.PCIDevice(address)
		}
		return text + fmt.Sprintf(" The same card (%s, subsystem %s) is now at %s: set address = %q, or remove the block.",
			was.ID, was.SubsystemID, address, address)
	}
	return text + " Remove the block, or set address to where the card is now (gpu_inventory with source = \"proxmox\" lists the " +
		"node's GPUs)."
}

// groupWhole is the error for an entry whose IOMMU group holds functions
// it does not pass: a VM must get every device of a group or none.
func groupWhole(e resolvedEntry, fns, all []proxmox.PCIFunction) diag.Diagnostics {
	var diags diag.Diagnostics
	group := fns[0].IOMMUGroup
	if group < 0 {
		diags.AddAttributeError(e.at, "IOMMU is off", fmt.Sprintf("%s on node %s: the node reports no IOMMU group, so the IOMMU is off "+
			"and nothing can be passed through. Enable it in the firmware (VT-d / AMD-Vi) and on the kernel command line "+
			"(intel_iommu=on or amd_iommu=on, iommu=pt), then reboot the node", e.Path, e.Node))
		return diags
	}
	var left []string
	for _, fn := range all {
		if fn.IOMMUGroup == group && !proxmox.PCIListCovers(e.Path, fn.Address) {
			left = append(left, fn.Describe())
		}
	}
	if len(left) == 0 {
		return diags
	}
	diags.AddAttributeError(e.at, "IOMMU group not mapped whole", fmt.Sprintf("%s on node %s is in IOMMU group %d, which also holds "+
		"%s. A VM must get every device of an IOMMU group or none (the host loses the others while the VM runs), and a mapping entry "+
		"passes one device. List the whole device (address without function) when those are the card's own functions; else move the "+
		"card to a slot with an IOMMU group of its own, or split the group (ACS: a PCIe switch or root port with ACS, or the "+
		"pcie_acs_override kernel parameter), or pass the devices by address in gpu_passthrough_vm (root@pam)",
		e.Path, e.Node, group, strings.Join(left, ", ")))
	return diags
}

// mdevMismatch is the error for a mapping whose mdev flag differs from
// what the node reports for the device: PVE's assert_valid compares them
// (pve-guest-common PVE/Mapping/PCI.pm, sub assert_valid: "'mdev' does
// not match") and qemu-server's parse_hostpci fails the VM's start on it.
func mdevMismatch(req mappingRequest, e resolvedEntry, fns []proxmox.PCIFunction) diag.Diagnostic {
	for _, path := range strings.Split(e.Path, ";") {
		fn := functionAt(fns, proxmox.PrimaryFunction(path))
		if fn.MdevCapable == req.mdev {
			continue
		}
		if fn.MdevCapable {
			return diag.NewAttributeErrorDiagnostic(pathMdev, "Mapping must be marked mdev", fmt.Sprintf("%s on node %s offers mediated "+
				"devices (vGPU), and PVE requires mdev = true on a mapping of it: with mdev = false every VM using the mapping fails to "+
				"start (\"'mdev' does not match\"). Set mdev = true, or leave it out (it follows the devices): a VM without gpu.mdev still "+
				"gets the whole device", fn.Address, e.Node))
		}
		return diag.NewAttributeErrorDiagnostic(pathMdev, "Device has no vGPU", fmt.Sprintf("mdev = true, but %s on node %s offers no "+
			"mediated devices (vGPU), and PVE requires the flag to match the device: every VM using the mapping would fail to start "+
			"(\"'mdev' does not match\"). Set mdev = false, or leave it out (it follows the devices), or enable NVIDIA vGPU on the "+
			"node", fn.Address, e.Node))
	}
	return nil
}

var pathMdev = path.Root("mdev")

// overlaps are the diagnostics for other mappings with an entry on e's
// device (on e's node, a path that covers says shares a function with
// e's): an error when both are passthrough mappings (two pools fighting
// over a card), a warning when either is for vGPUs.
func overlaps(req mappingRequest, e resolvedEntry, covers func(otherPath string) bool, others []proxmox.PCIMapping) diag.Diagnostics {
	var diags diag.Diagnostics
	for _, m := range others {
		if m.ID == req.name {
			continue
		}
		for _, oe := range m.Entries {
			if oe.Node != e.Node || !covers(oe.Path) {
				continue
			}
			if !req.mdev && !m.Mdev {
				diags.AddAttributeError(e.at, "Device in another mapping", fmt.Sprintf("%s on node %s is in mapping %q already "+
					"(entry %s), and both are passthrough mappings: VMs of the two would fight over the card, each taking it from the "+
					"other's pool. Leave it out of this mapping (select.nodes, or other device blocks), or remove it from %q",
					e.Path, e.Node, m.ID, oe.Path, m.ID))
				continue
			}
			diags.AddAttributeWarning(e.at, "Device in another mapping", fmt.Sprintf("%s on node %s is in mapping %q too (entry %s, "+
				"%s). vGPU instances share a card by design, but a VM passing the whole card and a VM with a vGPU instance of it "+
				"cannot run together: PVE refuses the second one's start", e.Path, e.Node, m.ID, oe.Path, mdevWord(m.Mdev)))
		}
	}
	return diags
}

// overlapsAtWrite are overlaps' diagnostics for the mapping m about to be
// written, with entries, against mappings (the cluster's, read right
// before the write): a mapping another resource of the same apply created
// after this one's plan was made. Paths share a function when one covers
// the other (the functions are not read again).
func overlapsAtWrite(m proxmox.PCIMapping, entries []resolvedEntry, mappings []proxmox.PCIMapping) diag.Diagnostics {
	var diags diag.Diagnostics
	req := mappingRequest{name: m.ID, mdev: m.Mdev, mdevSet: true}
	for _, e := range entries {
		if len(e.at.Steps()) == 0 {
			e.at = path.Root("entries") // planned entries: the block that chose them is not known here
		}
		diags.Append(overlaps(req, e, func(other string) bool { return pathsOverlap(e.Path, other) }, mappings)...)
	}
	return diags
}

// pathsOverlap says whether two mapping paths (each a function, a whole
// device, or a ';' list of them) pass a function in common.
func pathsOverlap(a, b string) bool {
	for _, x := range strings.Split(a, ";") {
		for _, y := range strings.Split(b, ";") {
			if x, y = strings.TrimSpace(x), strings.TrimSpace(y); x != "" && y != "" && (proxmox.PCICovers(x, y) || proxmox.PCICovers(y, x)) {
				return true
			}
		}
	}
	return false
}

func mdevWord(mdev bool) string {
	if mdev {
		return "a vGPU (mdev) mapping"
	}
	return "a passthrough mapping"
}

// functionsOf are the functions of all that address (a function, a whole
// device, or a ';' list of them) passes, in address order.
func functionsOf(all []proxmox.PCIFunction, address string) []proxmox.PCIFunction {
	return (&proxmox.NodeFacts{Functions: all}).DeviceFunctions(address)
}

// functionAt is the function at address in all, or a zero one.
func functionAt(all []proxmox.PCIFunction, address string) proxmox.PCIFunction {
	fn, _ := (&proxmox.NodeFacts{Functions: all}).Function(address)
	return fn
}

// nvidiaGPUsOn lists the NVIDIA GPUs of nodes, for messages:
// "pve-l40s: 0000:c1:00.0 AD102GL [L40S]; pve-cpu: none".
func nvidiaGPUsOn(nodes []string, hw mappingHardware) string {
	var out []string
	for _, node := range nodes {
		var gpus []string
		for _, fn := range hw.functions[node] {
			if proxmox.IsNVIDIAGPU(fn) {
				gpus = append(gpus, fn.Address+" "+fn.DeviceName)
			}
		}
		if len(gpus) == 0 {
			gpus = []string{"none"}
		}
		out = append(out, node+": "+strings.Join(gpus, ", "))
	}
	return strings.Join(out, "; ")
}
