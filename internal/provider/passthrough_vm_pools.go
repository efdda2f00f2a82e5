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
// has for it on its node (the backend's GuestGPUFunction: the device the
// QEMU monitor reported, else what the line names; facts must hold the VM
// as a guest, as readFacts records it) and the devices it may be given,
// from facts when they could be read.
func gpuStatuses(live proxmox.VM, facts *proxmox.NodeFacts) []passthroughGPUStatusModel {
	out := make([]passthroughGPUStatusModel, 0, len(live.HostPCI))
	for _, i := range slices.Sorted(maps.Keys(live.HostPCI)) {
		value := live.HostPCI[i]
		s := passthroughGPUStatusModel{HostPCI: "hostpci" + strconv.Itoa(i), Value: value, IOMMUGroup: -1, Candidates: []string{}}
		if g, err := proxmox.ParseHostPCI(value); err == nil {
			s.Candidates = gpuCandidates(g, live.Node, facts)
		}
		if facts != nil {
			if address := facts.GuestGPUFunction(live.Node, live.VMID, i); address != "" {
				s.PCIAddress = proxmox.NormalizePCIAddress(address)
			}
			if f, ok := facts.Function(s.PCIAddress); ok && s.PCIAddress != "" {
				s.VendorID, s.DeviceID, s.Product, s.IOMMUGroup = f.VendorID, f.DeviceID, f.DeviceName, int64(f.IOMMUGroup)
			}
		}
		out = append(out, s)
	}
	return out
}

// gpuCandidates are the devices hostpci line g may be given on node: the
// paths of its mapping's entries there, in the order Proxmox tries them,
// or its raw address.
func gpuCandidates(g proxmox.GPU, node string, facts *proxmox.NodeFacts) []string {
	out := []string{}
	switch {
	case g.Mapping == "":
		return []string{g.PCIAddress}
	case facts == nil:
		return out
	}
	m, _ := facts.Mapping(g.Mapping)
	for _, e := range m.EntriesOn(node) {
		out = append(out, e.Path)
	}
	return out
}

// readFacts reads what resolves the gpus attribute: the node's PCI
// functions and the cluster's mappings, with the VM itself as the only
// guest and, when it runs on a GPU pool, the devices it was given (the
// backend's ReadHostDevices). When Proxmox does not answer, the facts
// hold only the VM (with a debug line): gpus then has no host details but
// raw addresses; and a warning when the devices a pool gave the VM cannot
// be read.
func (r *PassthroughVMResource) readFacts(ctx context.Context, client *proxmox.Client, live proxmox.VM) (*proxmox.NodeFacts, diag.Diagnostics) {
	var diags diag.Diagnostics
	node := live.Node
	facts := &proxmox.NodeFacts{Node: node, Identity: client.Identity(), Guests: []proxmox.Guest{{
		Node: node, VMID: live.VMID, Name: live.Name, Status: live.Status, HostPCI: live.HostPCI,
	}}}
	functions, err := client.PCIFunctions(ctx, node)
	var mappings []proxmox.PCIMapping
	if err == nil {
		mappings, err = client.PCIMappings(ctx)
	}
	if err != nil {
		tflog.Debug(ctx, "could not read the node's PCI devices: gpus has no host details", map[string]any{"error": err.Error()})
		return facts, diags
	}
	facts.Functions, facts.Mappings = functions, mappings
	err = client.ReadHostDevices(ctx, facts)
	if own := facts.Guests[0]; err != nil || (own.Status == "running" && own.HostDevices == nil && facts.UsesPool(own)) {
		why := "which failed"
		if err != nil {
			why += ": " + err.Error()
		} else {
			why += " (the provider may not read it: Sys.Audit on /vms/" + strconv.Itoa(live.VMID) + " on PVE 9, VM.Monitor on PVE 8; " +
				"or the VM stopped meanwhile)"
		}
		diags.AddAttributeWarning(path.Root("gpus"), "reading which pool devices Proxmox VM "+strconv.Itoa(live.VMID)+" was given",
			fmt.Sprintf("VM %d uses a GPU pool (a mapping with several entries on node %s), and which device it was given is read from "+
				"its QEMU monitor (info qtree), %s. gpus[*].pci_address stays empty for those GPUs until it can be read.",
				live.VMID, node, why))
	}
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

// describePoolExhausted is the detail of a pool of size devices on node
// that has none left for this VM's GPU: holders are the running VMs other
// than this one that hold them (the preflight's finding); the rest, if
// any, this VM's earlier GPUs on the pool take.
func describePoolExhausted(name string, index int, node string, size int, holders []proxmox.Holder) string {
	out := make([]string, len(holders))
	for i, h := range holders {
		if h.Device == "" {
			out[i] = fmt.Sprintf("VM %d %q, running: %s (which device it was given could not be read)", h.Guest.VMID, h.Guest.Name, h.Line)
			continue
		}
		out[i] = fmt.Sprintf("%s (VM %d %q, running: %s)", h.Device, h.Guest.VMID, h.Guest.Name, h.Line)
	}
	list := strings.Join(out, ", ")
	if rest := size - len(holders); rest > 0 {
		list += fmt.Sprintf("; this VM's earlier GPUs on the pool take the other %d", rest)
	}
	return fmt.Sprintf("%s is a pool of %d devices on node %s, and running VMs hold every one: %s. Proxmox would fail this VM's "+
		"start (\"could not find a free device for 'hostpci%d'\"). %s.", name, size, node, list, index, poolFixes)
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
