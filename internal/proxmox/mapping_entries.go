package proxmox

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// A PCI mapping's entry is a property string of pve-guest-common
// PVE/Mapping/PCI.pm's $map_fmt: node, path, id, subsystem-id, iommugroup,
// description. PVE's property strings split on ',' and take no quoting
// (pve-common PVE/JSONSchema.pm parse_property_string), so no value may
// hold a comma ("illegal value with commas", print_property_string).

// EntryForDevice is the entry that maps fns, the functions of one device
// on node (in address order), as pve-manager's UI writes it: path is the
// device ("0000:41:00", every function) when wholeDevice, else the first
// function; id, subsystem-id and iommugroup are the first function's,
// which is what PVE::Mapping::PCI::assert_valid compares ("If the function
// is omitted, the whole device is mapped. In that case use the attributes
// of the first device", $map_fmt's path). fns empty: an entry with only
// the node.
func EntryForDevice(node string, fns []PCIFunction, wholeDevice bool) PCIMappingEntry {
	e := PCIMappingEntry{Node: node, IOMMUGroup: -1}
	if len(fns) == 0 {
		return e
	}
	sorted := append([]PCIFunction(nil), fns...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Address < sorted[j].Address })
	first := sorted[0]
	e.Path = NormalizePCIAddress(first.Address)
	if wholeDevice {
		e.Path = PCIDevice(e.Path)
	}
	e.ID = hexID(first.VendorID) + ":" + hexID(first.DeviceID)
	if first.SubsystemVendorID != "" && first.SubsystemDeviceID != "" {
		e.SubsystemID = hexID(first.SubsystemVendorID) + ":" + hexID(first.SubsystemDeviceID)
	}
	e.IOMMUGroup = first.IOMMUGroup
	return e
}

// hexID is a PCI ID without its "0x", lowercase: "0x10DE" -> "10de".
func hexID(id string) string {
	return strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(id, "0x"), "0X"))
}

// FormatMappingEntry is e as a map entry:
// "node=pve,path=0000:01:00,id=10de:2230,subsystem-id=10de:1459,iommugroup=14"
// (then description when set). Empty optional values and an IOMMU group
// below 0 are left out.
func FormatMappingEntry(e PCIMappingEntry) string {
	parts := []string{"node=" + e.Node, "path=" + e.Path}
	if e.ID != "" {
		parts = append(parts, "id="+e.ID)
	}
	if e.SubsystemID != "" {
		parts = append(parts, "subsystem-id="+e.SubsystemID)
	}
	if e.IOMMUGroup >= 0 {
		parts = append(parts, "iommugroup="+strconv.Itoa(e.IOMMUGroup))
	}
	if e.Description != "" {
		parts = append(parts, "description="+e.Description)
	}
	return strings.Join(parts, ",")
}

// ParseMappingEntry reads a map entry as FormatMappingEntry writes it (any
// key order); an entry without iommugroup has IOMMUGroup -1.
func ParseMappingEntry(s string) PCIMappingEntry {
	o := splitOptions(s, "")
	e := PCIMappingEntry{Node: o["node"], Path: o["path"], ID: o["id"], SubsystemID: o["subsystem-id"], IOMMUGroup: -1, Description: o["description"]}
	if g, err := strconv.Atoi(strings.TrimSpace(o["iommugroup"])); err == nil {
		e.IOMMUGroup = g
	}
	return e
}

// EntriesOn are m's entries on node, in the mapping's order: the
// alternatives a VM starting there with the mapping chooses from (more
// than one: a pool). pve-guest-common PVE/Mapping/PCI.pm get_node_mapping.
func (m PCIMapping) EntriesOn(node string) []PCIMappingEntry {
	var out []PCIMappingEntry
	for _, e := range m.Entries {
		if e.Node == node {
			out = append(out, e)
		}
	}
	return out
}

// CheckMappingEntry is PVE::Mapping::PCI::assert_valid (pve-guest-common
// src/PVE/Mapping/PCI.pm) called without the cluster mapping's config: ""
// when fns, the node's PCI functions, match e, else PVE's message for the
// first mismatch. It compares id, iommugroup (the first path of a ';'
// list only) and subsystem-id of each path's function (function 0 of a
// whole device). PVE's message names the mapping, which an entry does not
// know: use PCIMapping.Check for the message word for word, and for the
// mdev comparison qemu-server makes at VM start.
func CheckMappingEntry(e PCIMappingEntry, fns []PCIFunction) string {
	return assertValid("", e, fns, nil)
}

// Check is PVE::Mapping::PCI::assert_valid($m.ID, $e, $m) as qemu-server
// (PVE/QemuServer/PCI.pm parse_hostpci, before a VM with the mapping
// starts) and pve-manager (PVE/API2/Cluster/Mapping/PCI.pm index with
// check-node) call it: CheckMappingEntry's comparisons, and mdev (the
// mapping's flag against the device's mdev capability). "" when e matches
// the node's functions fns, else PVE's message, e.g. "'id' does not match
// for 'a6000-0' (10de:2231 != 10de:2230)". qemu-server refuses the start
// with "PCI device mapping invalid (hardware probably changed): " + it.
func (m PCIMapping) Check(e PCIMappingEntry, fns []PCIFunction) string {
	return assertValid(m.ID, e, fns, &m)
}

// assertValid follows assert_valid line by line: for each path of e (a
// whole device gets ".0"), the function must exist, then the properties in
// sorted order (id, iommugroup, mdev, subsystem-id) must be both unset or
// both set and equal once "0x" is stripped; iommugroup is compared on the
// first path only; mdev only when the cluster mapping m is given.
func assertValid(name string, e PCIMappingEntry, fns []PCIFunction, m *PCIMapping) string {
	for idx, path := range strings.Split(e.Path, ";") {
		if !PCIHasFunction(path) {
			path += ".0"
		}
		info, ok := functionAt(fns, path)
		if !ok {
			return fmt.Sprintf("pci device '%s' not found", path)
		}
		expected := map[string]*string{"id": ptr(hexID(info.VendorID) + ":" + hexID(info.DeviceID))}
		configured := map[string]*string{"id": optional(e.ID)}
		if info.IOMMUGroup >= 0 {
			expected["iommugroup"] = ptr(strconv.Itoa(info.IOMMUGroup))
		}
		if e.IOMMUGroup >= 0 {
			configured["iommugroup"] = ptr(strconv.Itoa(e.IOMMUGroup))
		}
		if info.SubsystemVendorID != "" && info.SubsystemDeviceID != "" {
			expected["subsystem-id"] = ptr(hexID(info.SubsystemVendorID) + ":" + hexID(info.SubsystemDeviceID))
		}
		configured["subsystem-id"] = optional(e.SubsystemID)
		props := []string{"id", "iommugroup", "subsystem-id"}
		if m != nil {
			expected["mdev"], configured["mdev"] = ptr(boolDigit(info.MdevCapable)), ptr(boolDigit(m.Mdev))
			props = []string{"id", "iommugroup", "mdev", "subsystem-id"}
		}
		for _, prop := range props {
			if prop == "iommugroup" && idx > 0 {
				continue
			}
			want, got := expected[prop], configured[prop]
			switch {
			case want == nil && got == nil:
				continue
			case want != nil && got == nil:
				return fmt.Sprintf("missing expected property '%s' for device '%s'", prop, path)
			case want == nil && got != nil:
				return fmt.Sprintf("unexpected property '%s' configured for device '%s'", prop, path)
			}
			w, g := strings.ReplaceAll(*want, "0x", ""), strings.ReplaceAll(*got, "0x", "")
			if w != g {
				if name == "" {
					return fmt.Sprintf("'%s' does not match (%s != %s)", prop, w, g)
				}
				return fmt.Sprintf("'%s' does not match for '%s' (%s != %s)", prop, name, w, g)
			}
		}
	}
	return ""
}

// functionAt is the function at address among fns, which PVE's sysfs
// lookup (SysFSTools::pci_device_info) finds by its exact name; case and
// a left-out domain aside.
func functionAt(fns []PCIFunction, address string) (PCIFunction, bool) {
	address = NormalizePCIAddress(address)
	for _, fn := range fns {
		if NormalizePCIAddress(fn.Address) == address {
			return fn, true
		}
	}
	return PCIFunction{}, false
}

func ptr(s string) *string { return &s }

// optional is nil for "" (a property not configured).
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// configID is pve-common PVE/JSONSchema.pm's $CONFIGID_RE, the format
// (pve-configid) of a mapping's ID.
var configID = regexp.MustCompile(`^(?i:[a-z][a-z0-9_-]+)$`)

// ValidateMappingID checks id as PVE does before it creates a mapping:
// pve_verify_configid's "invalid configuration ID '<id>'" (a letter, then
// at least one letter, digit, '-' or '_').
func ValidateMappingID(id string) error {
	if !configID.MatchString(id) {
		return fmt.Errorf("invalid configuration ID '%s'", id)
	}
	return nil
}

// ValidateMappingDescription checks a mapping's or an entry's description
// against $map_fmt and the mapping schema: at most 4096 characters, and an
// entry's (entry true) without a comma, which its property string cannot
// hold (pve-common print_property_string: "illegal value with commas").
func ValidateMappingDescription(description string, entry bool) error {
	if len(description) > 4096 {
		return fmt.Errorf("the description is %d characters long; Proxmox VE takes at most 4096", len(description))
	}
	if entry && strings.Contains(description, ",") {
		return errors.New("an entry's description cannot hold a comma: Proxmox VE stores it in a comma-separated property string")
	}
	return nil
}
