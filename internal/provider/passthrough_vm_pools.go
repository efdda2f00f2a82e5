package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// This file holds what gpu_passthrough_vm does for GPU pools: a mapping
// with several entries on the VM's node, each an alternative. qemu-server
// (PVE/QemuServer/PCI.pm: parse_hostpci pushes one alternative per entry
// of the mapping on the node; choose_hostpci_devices takes the first one
// no running VM has reserved, else dies "could not find a free device for
// 'hostpciN'") picks the device when the VM starts, so which one a VM has
// is known only while it runs, from the QEMU monitor (the backend's
// VMHostDevices). Which devices are free is the backend's
// NodeFacts.Pool.

// gpuStatuses is gpus: each hostpci line with the host function the VM
// has for it on its node and the devices it may be given, from facts when
// they could be read.
func gpuStatuses(live proxmox.VM, facts *proxmox.NodeFacts) []passthroughGPUStatusModel {
	got := ownHostDevices(live, facts)
	out := make([]passthroughGPUStatusModel, 0, len(live.HostPCI))
	for _, i := range slices.Sorted(maps.Keys(live.HostPCI)) {
		value := live.HostPCI[i]
		s := passthroughGPUStatusModel{HostPCI: "hostpci" + strconv.Itoa(i), Value: value, IOMMUGroup: -1, Candidates: []string{}}
		if g, err := proxmox.ParseHostPCI(value); err == nil {
			s.Candidates = gpuCandidates(g, live.Node, facts)
			s.PCIAddress = gpuAddress(g, got[i], live.Node, facts)
		}
		if facts != nil && s.PCIAddress != "" {
			if f, ok := facts.Function(s.PCIAddress); ok {
				s.VendorID, s.DeviceID, s.Product, s.IOMMUGroup = f.VendorID, f.DeviceID, f.DeviceName, int64(f.IOMMUGroup)
			}
		}
		out = append(out, s)
	}
	return out
}

// gpuAddress is the host function of hostpci line g: got, the device the
// running VM was given (from the QEMU monitor), or else the one g names on
// node, through the only entry of its mapping there or as its raw address;
// "" for a pool (the VM holds none of its devices, or Proxmox did not say
// which) or when facts could not be read.
func gpuAddress(g proxmox.GPU, got, node string, facts *proxmox.NodeFacts) string {
	if got != "" {
		return proxmox.NormalizePCIAddress(got)
	}
	if g.Mapping != "" && len(mappingEntriesOn(facts, g.Mapping, node)) > 1 {
		return ""
	}
	return facts.GPUFunction(g, node)
}

// gpuCandidates are the devices hostpci line g may be given on node: the
// paths of its mapping's entries there, in the order Proxmox tries them,
// or its raw address.
func gpuCandidates(g proxmox.GPU, node string, facts *proxmox.NodeFacts) []string {
	if g.Mapping == "" {
		return []string{g.PCIAddress}
	}
	out := []string{}
	for _, e := range mappingEntriesOn(facts, g.Mapping, node) {
		out = append(out, e.Path)
	}
	return out
}

// mappingEntriesOn are mapping id's entries on node; none when facts are nil.
func mappingEntriesOn(facts *proxmox.NodeFacts, id, node string) []proxmox.PCIMappingEntry {
	if facts == nil {
		return nil
	}
	m, ok := facts.Mapping(id)
	if !ok {
		return nil
	}
	return m.EntriesOn(node)
}

// usesPool says whether one of a VM's hostpci lines is a mapping with
// several entries on its node.
func usesPool(node string, hostPCI map[int]string, facts *proxmox.NodeFacts) bool {
	for _, value := range hostPCI {
		if g, err := proxmox.ParseHostPCI(value); err == nil && g.Mapping != "" && len(mappingEntriesOn(facts, g.Mapping, node)) > 1 {
			return true
		}
	}
	return false
}

// ownHostDevices are the devices the VM itself was given, as readFacts
// recorded them in facts (hostpci index -> host address); nil when none were read.
func ownHostDevices(live proxmox.VM, facts *proxmox.NodeFacts) map[int]string {
	if facts == nil {
		return nil
	}
	for _, g := range facts.Guests {
		if g.Node == live.Node && g.VMID == live.VMID {
			return g.HostDevices
		}
	}
	return nil
}

// readFacts reads what resolves the gpus attribute: the node's PCI
// functions and the cluster's mappings and, for a running VM on a GPU
// pool, the devices it was given (recorded as the VM's own entry in
// Guests). It returns nil (with a debug line) when Proxmox does not
// answer: gpus then has no host details; and a warning when the devices a
// pool gave the VM cannot be read.
func (r *PassthroughVMResource) readFacts(ctx context.Context, client *proxmox.Client, live proxmox.VM) (*proxmox.NodeFacts, diag.Diagnostics) {
	var diags diag.Diagnostics
	node := live.Node
	functions, err := client.PCIFunctions(ctx, node)
	var mappings []proxmox.PCIMapping
	if err == nil {
		mappings, err = client.PCIMappings(ctx)
	}
	if err != nil {
		tflog.Debug(ctx, "could not read the node's PCI devices: gpus has no host details", map[string]any{"error": err.Error()})
		return nil, diags
	}
	facts := &proxmox.NodeFacts{Node: node, Identity: client.Identity(), Functions: functions, Mappings: mappings}
	if live.Status != "running" || !usesPool(node, live.HostPCI, facts) {
		return facts, diags
	}
	devices, err := client.VMHostDevices(ctx, node, live.VMID)
	if err != nil {
		diags.AddAttributeWarning(path.Root("gpus"), "reading which pool devices Proxmox VM "+strconv.Itoa(live.VMID)+" was given",
			fmt.Sprintf("VM %d uses a GPU pool (a mapping with several entries on node %s), and which device it was given is read from "+
				"its QEMU monitor (info qtree), which failed: %s. gpus[*].pci_address stays empty for those GPUs until it can be read.",
				live.VMID, node, err))
		return facts, diags
	}
	facts.Guests = append(facts.Guests, proxmox.Guest{
		Node: node, VMID: live.VMID, Name: live.Name, Status: live.Status, HostPCI: live.HostPCI, HostDevices: devices,
	})
	return facts, diags
}

// describePool is "0000:41:00 (VM 4201 \"pool-a\", running), 0000:61:00
// (free)": each device of a pool and who holds it.
func describePool(devices []proxmox.PoolDevice) string {
	out := make([]string, len(devices))
	for i, d := range devices {
		if d.Holder == nil && len(d.Maybe) > 0 {
			out[i] = fmt.Sprintf("%s (free unless %s has it: which device it was given could not be read)",
				d.Entry.Path, proxmox.DescribeHolders(d.Maybe))
			continue
		}
		if d.Holder == nil {
			out[i] = d.Entry.Path + " (free)"
			continue
		}
		h := d.Holder.Guest
		out[i] = fmt.Sprintf("%s (VM %d %q, running: %s)", d.Entry.Path, h.VMID, h.Name, d.Holder.Line)
	}
	return strings.Join(out, ", ")
}

// poolFixes are the ways out of a pool with no free device.
const poolFixes = "Stop one of those VMs (started = false on its gpu_passthrough_vm, applied before this VM is planned: a plan " +
	"sees only what runs now), add a device to the mapping on this node (gpu_pci_mapping), or put this VM on another node whose " +
	"entries of the mapping are free (gpu_inventory with source = \"proxmox\" lists each mapping's devices per node, in use or free)"

// describePoolExhausted is the detail of a pool whose every device on node
// a running VM other than this one holds.
func describePoolExhausted(name string, index int, node string, devices []proxmox.PoolDevice) string {
	return fmt.Sprintf("%s is a pool of %d devices on node %s, and running VMs hold every one: %s. Proxmox would fail this VM's "+
		"start (\"could not find a free device for 'hostpci%d'\"). %s.", name, len(devices), node, describePool(devices), index, poolFixes)
}

// freeDevicePattern is qemu-server's error when no alternative of a
// hostpci line is free (PVE/QemuServer/PCI.pm, choose_hostpci_devices).
var freeDevicePattern = regexp.MustCompile(`could not find a free device for 'hostpci(\d+)'`)

// poolStartFailure explains a start that Proxmox failed for want of a free
// device in a GPU pool: the attribute of the GPU and which VMs hold each
// device of its pool now. ok is false when err is no such failure (or the
// pool cannot be read back). It reads on a context of its own, as a
// create's may have ended.
func poolStartFailure(ctx context.Context, client *proxmox.Client, node string, gpus []proxmox.GPU, err error) (path.Path, string, bool) {
	var task *proxmox.TaskError
	text := err.Error()
	if errors.As(err, &task) {
		text = task.ExitStatus + "\n" + strings.Join(task.Log, "\n")
	}
	m := freeDevicePattern.FindStringSubmatch(text)
	if m == nil {
		return path.Empty(), "", false
	}
	i, _ := strconv.Atoi(m[1])
	if i >= len(gpus) || gpus[i].Mapping == "" {
		return path.Empty(), "", false
	}
	readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	facts, readErr := client.ReadNodeFacts(readCtx, node, gpus)
	if readErr != nil {
		tflog.Debug(ctx, "could not read the GPU pool back after a failed start", map[string]any{"error": readErr.Error()})
		return path.Empty(), "", false
	}
	devices := facts.Pool(gpus[i].Mapping, node)
	name := fmt.Sprintf("gpu[%d].mapping %q", i, gpus[i].Mapping)
	return path.Root("gpu").AtListIndex(i).AtName("mapping"), fmt.Sprintf("%s is a pool of %d devices on node %s, and Proxmox found "+
		"none free when the VM started; held now: %s. VMs planned together on one pool in one apply each see it free at plan time, "+
		"and the first to start take its devices. %s.", name, len(devices), node, describePool(devices), poolFixes), true
}
