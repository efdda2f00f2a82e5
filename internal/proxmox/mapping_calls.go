package proxmox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// The cluster PCI mapping calls follow pve-manager
// PVE/API2/Cluster/Mapping/PCI.pm (schema: pve-api-9.1.json,
// /cluster/mapping/pci and /cluster/mapping/pci/{id}).

// mappingRow is a mapping as GET /cluster/mapping/pci lists it and GET
// /cluster/mapping/pci/{id} returns it: the section config's keys, with
// the file's digest (and the id in the list).
type mappingRow struct {
	ID                   string   `json:"id"`
	Description          string   `json:"description"`
	Mdev                 flexBool `json:"mdev"`
	LiveMigrationCapable flexBool `json:"live-migration-capable"`
	Map                  []string `json:"map"`
	Digest               string   `json:"digest"`
}

func (r mappingRow) mapping(id string) PCIMapping {
	m := PCIMapping{ID: id, Description: r.Description, Mdev: bool(r.Mdev), LiveMigrationCapable: bool(r.LiveMigrationCapable), Digest: r.Digest}
	for _, line := range r.Map {
		m.Entries = append(m.Entries, ParseMappingEntry(line))
	}
	return m
}

// mappingPath is /cluster/mapping/pci/{id}.
func mappingPath(id string) string { return "/cluster/mapping/pci/" + url.PathEscape(id) }

// ReadPCIMapping reads mapping id (GET /cluster/mapping/pci/{id}), with
// the digest an update can be given. A mapping that does not exist is
// found == false: PVE dies "mapping '<id>' not found" (a 500).
func (c *Client) ReadPCIMapping(ctx context.Context, id string) (PCIMapping, bool, error) {
	var row mappingRow
	if err := c.get(ctx, mappingPath(id), &row); err != nil {
		if IsNotFound(err) || isMappingNotFound(err, id) {
			return PCIMapping{}, false, nil
		}
		return PCIMapping{}, false, fmt.Errorf("reading PCI mapping %s: %w", id, err)
	}
	return row.mapping(id), true, nil
}

// isMappingNotFound says whether err is the get method's "mapping '<id>'
// not found" (PVE/API2/Cluster/Mapping/PCI.pm get).
func isMappingNotFound(err error, id string) bool {
	var ae *APIError
	return errors.As(err, &ae) && strings.Contains(ae.Message, "mapping '"+id+"' not found")
}

// mappingForm is m's settings as the create and update methods take them:
// map once per entry (the schema's array, repeated form values).
func mappingForm(m PCIMapping) url.Values {
	form := url.Values{}
	if m.Description != "" {
		form.Set("description", m.Description)
	}
	if m.Mdev {
		form.Set("mdev", "1")
	}
	if m.LiveMigrationCapable {
		form.Set("live-migration-capable", "1")
	}
	for _, e := range m.Entries {
		form.Add("map", FormatMappingEntry(e))
	}
	return form
}

// CreatePCIMapping creates m (POST /cluster/mapping/pci; Mapping.Modify on
// /mapping/pci). Its Digest is not sent. An ID taken already is PVE's
// "pci ID '<id>' already defined".
func (c *Client) CreatePCIMapping(ctx context.Context, m PCIMapping) error {
	form := mappingForm(m)
	form.Set("id", m.ID)
	if _, err := c.call(ctx, http.MethodPost, "/cluster/mapping/pci", form); err != nil {
		return fmt.Errorf("creating PCI mapping %s: %w", m.ID, err)
	}
	return nil
}

// UpdatePCIMapping replaces mapping m.ID's settings with m's (PUT
// /cluster/mapping/pci/{id}; Mapping.Modify on /mapping/pci/{id}): every
// entry is sent; an empty description and a false mdev or
// live-migration-capable go as delete= (back to PVE's default). With a
// digest PVE refuses the update when the mapping file changed since it was
// read ("detected modified configuration - file changed by other user?
// Try again.").
func (c *Client) UpdatePCIMapping(ctx context.Context, m PCIMapping, digest string) error {
	form := mappingForm(m)
	var deletes []string
	if m.Description == "" {
		deletes = append(deletes, "description")
	}
	if !m.Mdev {
		deletes = append(deletes, "mdev")
	}
	if !m.LiveMigrationCapable {
		deletes = append(deletes, "live-migration-capable")
	}
	if len(deletes) > 0 {
		form.Set("delete", strings.Join(deletes, ","))
	}
	if digest != "" {
		form.Set("digest", digest)
	}
	if _, err := c.call(ctx, http.MethodPut, mappingPath(m.ID), form); err != nil {
		return fmt.Errorf("updating PCI mapping %s: %w", m.ID, err)
	}
	return nil
}

// DeletePCIMapping deletes mapping id (DELETE /cluster/mapping/pci/{id};
// Mapping.Modify on /mapping/pci). A mapping that is gone counts as
// deleted: PVE itself answers success for it.
func (c *Client) DeletePCIMapping(ctx context.Context, id string) error {
	if _, err := c.call(ctx, http.MethodDelete, mappingPath(id), nil); err != nil {
		if IsNotFound(err) || isMappingNotFound(err, id) {
			return nil
		}
		return fmt.Errorf("deleting PCI mapping %s: %w", id, err)
	}
	return nil
}

// MappingPrivileges are the client's privileges on /mapping/pci/{id}, or
// on /mapping/pci when id is "" (GET /access/permissions): privilege ->
// propagated. root@pam (with its password) has every privilege, which the
// map says with the Mapping ones set.
func (c *Client) MappingPrivileges(ctx context.Context, id string) (map[string]bool, error) {
	if c.identity.IsRootPam() {
		return map[string]bool{"Mapping.Audit": true, "Mapping.Modify": true, "Mapping.Use": true}, nil
	}
	path := "/mapping/pci"
	if id != "" {
		path += "/" + id
	}
	return c.Permissions(ctx, path)
}

// VMHostDevices asks the QEMU monitor of running VM vmid on node which
// host devices its hostpci entries got (POST
// /nodes/{node}/qemu/{vmid}/monitor command="info qtree"). qemu-server
// 9's PVE/API2/Qemu.pm monitor checks Sys.Audit or Sys.Modify on
// /vms/{vmid}; "info" needs nothing more (PVE/API2/Qemu/HMPPerms.pm:
// info => 'none'); PVE 8 checked VM.Monitor there (privileges.go has
// both). The method answers a failed command with 200 and
// "ERROR: <message>" (a VM not running: "ERROR: VM 100 not running"),
// which is an error here.
func (c *Client) VMHostDevices(ctx context.Context, node string, vmid int) (map[int]string, error) {
	path := "/nodes/" + url.PathEscape(node) + "/qemu/" + strconv.Itoa(vmid) + "/monitor"
	raw, err := c.call(ctx, http.MethodPost, path, url.Values{"command": {"info qtree"}})
	if err != nil {
		return nil, fmt.Errorf("reading the devices of VM %d on node %s from its QEMU monitor: %w", vmid, node, err)
	}
	var answer struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return nil, fmt.Errorf("reading the devices of VM %d on node %s from its QEMU monitor: %w", vmid, node, err)
	}
	if msg, failed := strings.CutPrefix(answer.Data, "ERROR: "); failed {
		return nil, fmt.Errorf("reading the devices of VM %d on node %s from its QEMU monitor: %w", vmid, node, &MonitorError{Message: strings.TrimSpace(msg)})
	}
	return ParseQtreeHostDevices(answer.Data), nil
}

// MonitorError is a monitor command that failed: the monitor method
// answers 200 with "ERROR: <message>" (qemu-server PVE/API2/Qemu.pm
// monitor), e.g. "VM 100 not running".
type MonitorError struct{ Message string }

func (e *MonitorError) Error() string { return "the QEMU monitor answered: " + e.Message }

// qtreeNoHost is how QEMU prints a vfio-pci host address that was not
// given (hw/core/qdev-properties-system.c get_pci_host_devaddr: the
// buffer's default when every field is ~0).
const qtreeNoHost = "ffff:ff:ff.f"

var (
	// qtreeDev is a device's line of "info qtree" (QEMU
	// system/qdev-monitor.c qdev_print): `dev: vfio-pci, id "hostpci0"`.
	qtreeDev = regexp.MustCompile(`^\s*dev:\s*([^,\s]+),\s*id\s+"([^"]*)"`)
	// qtreeHost is vfio-pci's host property as qdev_print_props prints
	// it: `host = "0000:41:00.0"`.
	qtreeHost = regexp.MustCompile(`^\s*host\s*=\s*"([0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F])"`)
	// hostpciID is the id qemu-server gives a hostpci device
	// (PVE/QemuServer/PCI.pm print_hostpci_devices): "hostpci0", or
	// "hostpci0.1" for function 1 of a multifunction one.
	hostpciID = regexp.MustCompile(`^hostpci(\d+)(?:\.(\d+))?$`)
)

// ParseQtreeHostDevices reads the vfio-pci devices of an "info qtree"
// answer: hostpci index -> the host function it passes (the first
// function, ".0", of a multifunction device). A device with no host
// address (a vGPU: sysfsdev = "/sys/bus/mdev/devices/<uuid>", host
// printed as "ffff:ff:ff.f") is left out. Lines may end "\r\n", as the
// monitor writes them.
func ParseQtreeHostDevices(qtree string) map[int]string {
	out := map[int]string{}
	sub := map[int]int{} // index -> the multifunction sub-id recorded
	index, part, inVFIO := -1, 0, false
	for _, line := range strings.Split(qtree, "\n") {
		if m := qtreeDev.FindStringSubmatch(line); m != nil {
			inVFIO, index = false, -1
			id := hostpciID.FindStringSubmatch(m[2])
			if m[1] != "vfio-pci" || id == nil {
				continue
			}
			index, _ = strconv.Atoi(id[1])
			part = 0
			if id[2] != "" {
				part, _ = strconv.Atoi(id[2])
			}
			inVFIO = true
			continue
		}
		if !inVFIO {
			continue
		}
		if m := qtreeHost.FindStringSubmatch(line); m != nil {
			inVFIO = false
			if m[1] == qtreeNoHost {
				continue // given sysfsdev (an mdev), not a host address
			}
			if prev, seen := sub[index]; !seen || part < prev {
				out[index], sub[index] = NormalizePCIAddress(m[1]), part
			}
		}
	}
	return out
}
