package proxmox

import (
	"context"
	"fmt"
	"net/url"
	"sort"
)

// PCIFunctions lists every PCI function of node (GET
// /nodes/{node}/hardware/pci with pci-class-blacklist="" so nothing is
// hidden).
func (c *Client) PCIFunctions(ctx context.Context, node string) ([]PCIFunction, error) {
	var rows []struct {
		ID              string   `json:"id"`
		Class           string   `json:"class"`
		Vendor          string   `json:"vendor"`
		Device          string   `json:"device"`
		SubsystemVendor string   `json:"subsystem_vendor"`
		SubsystemDevice string   `json:"subsystem_device"`
		VendorName      string   `json:"vendor_name"`
		DeviceName      string   `json:"device_name"`
		IOMMUGroup      *flexInt `json:"iommugroup"`
		Mdev            flexBool `json:"mdev"`
	}
	path := "/nodes/" + url.PathEscape(node) + "/hardware/pci?pci-class-blacklist="
	if err := c.get(ctx, path, &rows); err != nil {
		return nil, fmt.Errorf("listing PCI devices of node %s: %w", node, err)
	}
	out := make([]PCIFunction, 0, len(rows))
	for _, r := range rows {
		group := -1
		if r.IOMMUGroup != nil {
			group = int(*r.IOMMUGroup)
		}
		out = append(out, PCIFunction{
			Node: node, Address: NormalizePCIAddress(r.ID), VendorID: r.Vendor, DeviceID: r.Device,
			SubsystemVendorID: r.SubsystemVendor, SubsystemDeviceID: r.SubsystemDevice, Class: r.Class,
			VendorName: r.VendorName, DeviceName: r.DeviceName, IOMMUGroup: group, MdevCapable: bool(r.Mdev),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, nil
}

// MdevTypes lists the mediated device types address offers on node.
func (c *Client) MdevTypes(ctx context.Context, node, address string) ([]MdevType, error) {
	var rows []struct {
		Type        string  `json:"type"`
		Name        string  `json:"name"`
		Description string  `json:"description"`
		Available   flexInt `json:"available"`
	}
	path := "/nodes/" + url.PathEscape(node) + "/hardware/pci/" + url.PathEscape(address) + "/mdev"
	if err := c.get(ctx, path, &rows); err != nil {
		return nil, fmt.Errorf("listing mdev types of %s on node %s: %w", address, node, err)
	}
	out := make([]MdevType, 0, len(rows))
	for _, r := range rows {
		out = append(out, MdevType{Type: r.Type, Name: r.Name, Description: r.Description, Available: int(r.Available)})
	}
	return out, nil
}

// PCIMappings lists the cluster's PCI resource mappings the client may
// see (GET /cluster/mapping/pci: those with Mapping.Audit, .Use or .Modify
// on /mapping/pci/<id>), sorted by ID.
func (c *Client) PCIMappings(ctx context.Context) ([]PCIMapping, error) {
	var rows []mappingRow
	if err := c.get(ctx, "/cluster/mapping/pci", &rows); err != nil {
		return nil, fmt.Errorf("listing cluster PCI mappings: %w", err)
	}
	out := make([]PCIMapping, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.mapping(r.ID))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Guests lists the cluster's QEMU VMs (GET /cluster/resources?type=vm) with
// the hostpci lines of each one's config; templates are included.
func (c *Client) Guests(ctx context.Context) ([]Guest, error) {
	resources, err := c.vmResources(ctx)
	if err != nil {
		return nil, err
	}
	var out []Guest
	for _, r := range resources {
		if r.Type != "qemu" {
			continue
		}
		g := Guest{Node: r.Node, VMID: int(r.VMID), Name: r.Name, Status: r.Status}
		config, err := c.vmConfig(ctx, r.Node, int(r.VMID))
		if IsNotFound(err) {
			continue // gone since the listing
		}
		if err != nil {
			return nil, err
		}
		g.HostPCI = hostPCILines(config)
		out = append(out, g)
	}
	return out, nil
}

type vmResource struct {
	Type     string   `json:"type"`
	Node     string   `json:"node"`
	VMID     flexInt  `json:"vmid"`
	Name     string   `json:"name"`
	Status   string   `json:"status"`
	Template flexBool `json:"template"`
}

func (c *Client) vmResources(ctx context.Context) ([]vmResource, error) {
	var rows []vmResource
	if err := c.get(ctx, "/cluster/resources?type=vm", &rows); err != nil {
		return nil, fmt.Errorf("listing cluster VMs: %w", err)
	}
	return rows, nil
}

// Permissions returns the caller's privileges on path (GET
// /access/permissions?path=...): privilege -> propagated.
func (c *Client) Permissions(ctx context.Context, path string) (map[string]bool, error) {
	var answer map[string]map[string]flexBool
	if err := c.get(ctx, "/access/permissions?path="+url.QueryEscape(path), &answer); err != nil {
		return nil, fmt.Errorf("reading permissions on %s: %w", path, err)
	}
	out := map[string]bool{}
	for p, privs := range answer {
		if p != path {
			continue
		}
		for priv, propagate := range privs {
			out[priv] = bool(propagate)
		}
	}
	return out, nil
}

// NextVMID asks the cluster for a free VMID.
func (c *Client) NextVMID(ctx context.Context) (int, error) {
	var id flexInt
	if err := c.get(ctx, "/cluster/nextid", &id); err != nil {
		return 0, fmt.Errorf("asking Proxmox VE for a free vmid: %w", err)
	}
	return int(id), nil
}
