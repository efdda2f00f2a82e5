package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// This file holds gpu_inventory's source "proxmox": the NVIDIA PCI
// functions of a Proxmox VE cluster's nodes, with who holds each and which
// mapping covers it.

// inventoryPCIDeviceModel is one element of gpu_inventory.pci_devices.
type inventoryPCIDeviceModel struct {
	Node              string                   `tfsdk:"node"`
	PCIAddress        string                   `tfsdk:"pci_address"`
	Device            string                   `tfsdk:"device"`
	GPU               bool                     `tfsdk:"gpu"`
	VendorID          string                   `tfsdk:"vendor_id"`
	DeviceID          string                   `tfsdk:"device_id"`
	SubsystemVendorID string                   `tfsdk:"subsystem_vendor_id"`
	SubsystemDeviceID string                   `tfsdk:"subsystem_device_id"`
	Class             string                   `tfsdk:"class"`
	VendorName        string                   `tfsdk:"vendor_name"`
	Product           string                   `tfsdk:"product"`
	IOMMUGroup        int64                    `tfsdk:"iommu_group"`
	MdevTypes         []inventoryMdevTypeModel `tfsdk:"mdev_types"`
	Mapping           *string                  `tfsdk:"mapping"`
	VMID              *int64                   `tfsdk:"vm_id"`
	VMName            *string                  `tfsdk:"vm_name"`
	VMRunning         bool                     `tfsdk:"vm_running"`
	Free              bool                     `tfsdk:"free"`
}

type inventoryMdevTypeModel struct {
	Type        string `tfsdk:"type"`
	Name        string `tfsdk:"name"`
	Description string `tfsdk:"description"`
	Available   int64  `tfsdk:"available"`
}

var inventoryMdevTypeObjectType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"type": types.StringType, "name": types.StringType, "description": types.StringType, "available": types.Int64Type,
}}

func inventoryPCIDeviceObjectType() types.ObjectType {
	return types.ObjectType{AttrTypes: map[string]attr.Type{
		"node": types.StringType, "pci_address": types.StringType, "device": types.StringType, "gpu": types.BoolType,
		"vendor_id": types.StringType, "device_id": types.StringType, "subsystem_vendor_id": types.StringType,
		"subsystem_device_id": types.StringType, "class": types.StringType, "vendor_name": types.StringType, "product": types.StringType,
		"iommu_group": types.Int64Type, "mdev_types": types.ListType{ElemType: inventoryMdevTypeObjectType},
		"mapping": types.StringType, "vm_id": types.Int64Type, "vm_name": types.StringType, "vm_running": types.BoolType, "free": types.BoolType,
	}}
}

func inventoryPCIDeviceAttributes() map[string]schema.Attribute {
	str := func(d string) schema.Attribute { return schema.StringAttribute{Computed: true, MarkdownDescription: d} }
	return map[string]schema.Attribute{
		"node":                str("Proxmox node."),
		"pci_address":         str("PCI address of the function, e.g. `0000:01:00.0`."),
		"device":              str("The device without its function, e.g. `0000:01:00`: a `gpu` block's `pci_address` that passes every function."),
		"gpu":                 schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the function is a display or 3D controller (class 0x0300 or 0x0302), not e.g. the GPU's audio function."},
		"vendor_id":           str("PCI vendor ID, `0x10de`."),
		"device_id":           str("PCI device ID, e.g. `0x2230`."),
		"subsystem_vendor_id": str("PCI subsystem vendor ID."),
		"subsystem_device_id": str("PCI subsystem device ID."),
		"class":               str("PCI class, e.g. `0x030000` (VGA) or `0x030200` (3D controller)."),
		"vendor_name":         str("Vendor name from the node's PCI database."),
		"product":             str("Device name from the node's PCI database, e.g. `GA102GL [RTX A6000]`."),
		"iommu_group":         schema.Int64Attribute{Computed: true, MarkdownDescription: "IOMMU group; -1 when the node reports none (IOMMU off)."},
		"mdev_types": schema.ListNestedAttribute{
			Computed:            true,
			MarkdownDescription: "NVIDIA vGPU (mediated device) types the function offers, with the instances left; empty when it is not mdev-capable.",
			NestedObject:        schema.NestedAttributeObject{Attributes: inventoryMdevTypeAttributes()},
		},
		"mapping": str("ID of the cluster PCI mapping whose entry on this node covers the function (a `gpu` block's `mapping`); null when none does."),
		"vm_id":   schema.Int64Attribute{Computed: true, MarkdownDescription: "VM the function is passed through to (whole, not as a vGPU), running or not; null when none."},
		"vm_name": str("Name of that VM; null when none."),
		"vm_running": schema.BoolAttribute{
			Computed: true, MarkdownDescription: "Whether that VM is running, which makes the function unavailable to another VM.",
		},
		"free": schema.BoolAttribute{Computed: true, MarkdownDescription: "No running VM has the function passed through whole."},
	}
}

// readProxmox fills model from the cluster's nodes.
func (d *InventoryDataSource) readProxmox(ctx context.Context, model *inventoryModel, diags *diag.Diagnostics) {
	summary := "reading GPU inventory from Proxmox VE"
	client := d.clients.proxmoxFor(ctx, summary, diags)
	if client == nil {
		return
	}
	var product *regexp.Regexp
	var wanted []string
	freeOnly := false
	if f := model.Filter; f != nil {
		if p := f.Product.ValueString(); p != "" {
			re, err := regexp.Compile(p)
			if err != nil {
				diags.AddAttributeError(path.Root("filter").AtName("product"), summary, fmt.Sprintf("filter.product %q is not a regular expression: %s", p, err))
				return
			}
			product = re
		}
		wanted = stringsOf(ctx, f.Nodes)
		freeOnly = f.FreeOnly.ValueBool()
	}
	start := time.Now()
	nodes, err := client.Nodes(ctx)
	if err != nil {
		diags.AddError(summary, err.Error())
		return
	}
	var names []string
	for _, n := range nodes {
		if len(wanted) == 0 && n.Status != "" && n.Status != "online" {
			tflog.Debug(ctx, "skipping a Proxmox node that is not online", map[string]any{"node": n.Name, "status": n.Status})
			continue
		}
		names = append(names, n.Name)
	}
	for _, w := range wanted {
		found := false
		for _, n := range nodes {
			found = found || n.Name == w
		}
		if !found {
			var all []string
			for _, n := range nodes {
				all = append(all, n.Name)
			}
			diags.AddAttributeError(path.Root("filter").AtName("nodes"), summary,
				fmt.Sprintf("filter.nodes names %q, which is not a node of the cluster; its nodes are %s", w, strings.Join(all, ", ")))
		}
	}
	if diags.HasError() {
		return
	}
	if len(wanted) > 0 {
		names = wanted
	}
	mappings, err := client.PCIMappings(ctx)
	if err != nil {
		diags.AddError(summary, err.Error())
		return
	}
	guests, err := client.Guests(ctx)
	if err != nil {
		diags.AddError(summary, err.Error())
		return
	}
	var devices []inventoryPCIDeviceModel
	pools := map[string]mappingNodeFacts{}
	for _, node := range names {
		functions, err := client.PCIFunctions(ctx, node)
		if err != nil {
			diags.AddError(summary, err.Error())
			return
		}
		pool, err := readMappingNode(ctx, client, node, functions, mappings, guests)
		if err != nil {
			diags.AddError(summary, err.Error())
			return
		}
		pools[node] = pool
		facts := pool.facts
		for _, fn := range functions {
			if !strings.EqualFold(fn.VendorID, proxmox.NVIDIAVendorID) {
				continue
			}
			if product != nil && !product.MatchString(fn.DeviceName) {
				continue
			}
			m := pciDeviceModel(fn, facts)
			if freeOnly && !m.Free {
				continue
			}
			if fn.MdevCapable {
				mdevs, err := pool.mdevTypes(ctx, client, fn)
				if err != nil {
					diags.AddError(summary, err.Error())
					return
				}
				m.MdevTypes = mdevTypeModels(mdevs)
			}
			devices = append(devices, m)
		}
	}
	tflog.Debug(ctx, "read the Proxmox GPU inventory", map[string]any{"nodes": len(names), "devices": len(devices), "duration": time.Since(start).String()})
	sort.SliceStable(devices, func(i, j int) bool {
		if devices[i].Node != devices[j].Node {
			return devices[i].Node < devices[j].Node
		}
		return devices[i].PCIAddress < devices[j].PCIAddress
	})
	list, dd := types.ListValueFrom(ctx, inventoryPCIDeviceObjectType(), devices)
	diags.Append(dd...)
	model.PCIDevices = list
	mappingList, dd := types.ListValueFrom(ctx, inventoryPCIMappingObjectType(), inventoryPCIMappings(mappings, pools))
	diags.Append(dd...)
	model.PCIMappings = mappingList
	model.InstanceTypes = types.ListNull(inventoryInstanceTypeObjectType())
	model.setKubernetesOutputsNull()
}

// pciDeviceModel is fn as pci_devices lists it: the mapping covering it on
// its node and the VM holding it (a running one first), from facts.
func pciDeviceModel(fn proxmox.PCIFunction, facts *proxmox.NodeFacts) inventoryPCIDeviceModel {
	m := inventoryPCIDeviceModel{
		Node: fn.Node, PCIAddress: fn.Address, Device: proxmox.PCIDevice(fn.Address), GPU: proxmox.IsNVIDIAGPU(fn),
		VendorID: fn.VendorID, DeviceID: fn.DeviceID, SubsystemVendorID: fn.SubsystemVendorID, SubsystemDeviceID: fn.SubsystemDeviceID,
		Class: fn.Class, VendorName: fn.VendorName, Product: fn.DeviceName, IOMMUGroup: int64(fn.IOMMUGroup),
		MdevTypes: []inventoryMdevTypeModel{}, Free: true,
	}
	if m.Node == "" {
		m.Node = facts.Node
	}
	for _, mp := range facts.Mappings {
		if slices.ContainsFunc(mp.EntriesOn(facts.Node), func(e proxmox.PCIMappingEntry) bool { return proxmox.PCIListCovers(e.Path, fn.Address) }) {
			id := mp.ID
			m.Mapping = &id
			break
		}
	}
	if h, ok := facts.HeldBy(facts.Node, []proxmox.PCIFunction{fn}, true, nil); ok {
		m.setHolder(h.Guest)
		m.Free = false
		return m
	}
	// A stopped VM holds it too, without making it unavailable.
	if h, ok := facts.HeldBy(facts.Node, []proxmox.PCIFunction{fn}, false, nil); ok {
		m.setHolder(h.Guest)
	}
	return m
}

func (m *inventoryPCIDeviceModel) setHolder(g proxmox.Guest) {
	id, name := int64(g.VMID), g.Name
	m.VMID, m.VMName, m.VMRunning = &id, &name, g.Status == "running"
}
