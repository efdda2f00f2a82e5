package pveemu

import (
	"slices"
	"strconv"
)

// The host profiles: the cluster's nodes and the PCI functions each
// reports at /nodes/{node}/hardware/pci.
const (
	NodeA6000 = "pve-a6000"  // 2× RTX A6000, each VGA + audio in an IOMMU group of its own
	NodeH100  = "pve-h100"   // H100 PCIe in IOMMU group 30 together with a ConnectX-7 NIC
	NodeL40S  = "pve-l40s"   // L40S with NVIDIA vGPU mdev types
	NodeL40SB = "pve-l40s-b" // two L40S (IOMMU groups 50 and 51), in no mapping: a two-device pool
	NodeCPU   = "pve-cpu"    // no GPU
)

// The cluster PCI resource mappings (/cluster/mapping/pci).
const (
	MappingA6000First  = "a6000-0"   // pve-a6000 0000:01:00 (both functions)
	MappingA6000Second = "a6000-1"   // pve-a6000 0000:02:00
	MappingL40SVGPU    = "l40s-vgpu" // pve-l40s 0000:c1:00.0, mdev
)

// TemplateName is the cloud-image template every GPU node has: VMID 9000
// on pve-a6000, 9001 on pve-h100, 9002 on pve-l40s, 9003 on pve-l40s-b
// (VMIDs are unique in a cluster, and PVE clones a VM with local disks
// only on its own node).
const TemplateName = "ubuntu-2404-cloud"

// Templates is the template's VMID per node.
var Templates = map[string]int{NodeA6000: 9000, NodeH100: 9001, NodeL40S: 9002, NodeL40SB: 9003}

// The storage and bridge every node has.
const (
	Storage = "local-lvm"
	Bridge  = "vmbr0"
)

// pciFunction is one entry of /nodes/{node}/hardware/pci.
type pciFunction struct {
	ID                  string // 0000:01:00.0
	Class               string // 0x030000
	Vendor, Device      string // 0x10de, 0x2230
	SubsystemVendor     string
	SubsystemDevice     string
	VendorName          string
	DeviceName          string
	SubsystemVendorName string
	SubsystemDeviceName string
	IOMMUGroup          int
	// Mdev lists the mediated device types (non-empty: mdev capable).
	Mdev []mdevType
}

// mdevType is a mediated device type and how many instances the device
// has of it in all.
type mdevType struct {
	Type, Name, Description string
	Instances               int
}

type hostNode struct {
	Name     string
	CPUs     int
	MemBytes int64
	PCI      []pciFunction
}

// mapping is one section of /etc/pve/mapping/pci.cfg as
// PVE::Mapping::PCI (pve-guest-common) holds it: the map lines as given,
// and the optional keys (description, mdev, live-migration-capable) as
// the file stores them ("1"/"0" for the booleans).
type mapping struct {
	ID   string
	Map  []string
	Opts map[string]string
}

// mappingEntry is one map line parsed with PVE::Mapping::PCI's $map_fmt;
// "" is a key the line does not set (PVE's values are never empty).
type mappingEntry struct {
	Node, Path, ID, SubsystemID, IOMMUGroup, Description string
}

func (m *mapping) mdev() bool          { return m.Opts["mdev"] == "1" }
func (m *mapping) liveMigration() bool { return m.Opts["live-migration-capable"] == "1" }

// entries are the map lines that parse (get_node_mapping warns about and
// skips the others).
func (m *mapping) entries() []mappingEntry {
	var out []mappingEntry
	for _, line := range m.Map {
		if e, err := parseMapEntry(line, ""); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// onNode is PVE::Mapping::PCI::get_node_mapping: the entries for node, in
// the order of the map lines.
func (m *mapping) onNode(node string) []mappingEntry {
	var out []mappingEntry
	for _, e := range m.entries() {
		if e.Node == node {
			out = append(out, e)
		}
	}
	return out
}

const nvidia = "0x10de"

// chipset is what every node has besides its GPUs: the host bridge and a
// SATA controller (hidden by the default pci-class-blacklist "05;06;0b"
// where their class is 0x06).
func chipset(group int) []pciFunction {
	return []pciFunction{
		{ID: "0000:00:00.0", Class: "0x060000", Vendor: "0x1022", Device: "0x14d8", SubsystemVendor: "0x1022", SubsystemDevice: "0x14d8",
			VendorName: "Advanced Micro Devices, Inc. [AMD]", DeviceName: "Genoa/Bergamo Root Complex", IOMMUGroup: group},
		{ID: "0000:00:14.0", Class: "0x0c0330", Vendor: "0x1022", Device: "0x15b6", SubsystemVendor: "0x1022", SubsystemDevice: "0x15b6",
			VendorName: "Advanced Micro Devices, Inc. [AMD]", DeviceName: "Raphael/Granite Ridge USB 3.1 xHCI", IOMMUGroup: group + 1},
	}
}

func a6000(bus string, group int) []pciFunction {
	return []pciFunction{
		{ID: "0000:" + bus + ":00.0", Class: "0x030000", Vendor: nvidia, Device: "0x2230", SubsystemVendor: nvidia, SubsystemDevice: "0x1459",
			VendorName: "NVIDIA Corporation", DeviceName: "GA102GL [RTX A6000]", SubsystemVendorName: "NVIDIA Corporation", SubsystemDeviceName: "GA102GL [RTX A6000]", IOMMUGroup: group},
		{ID: "0000:" + bus + ":00.1", Class: "0x040300", Vendor: nvidia, Device: "0x1aef", SubsystemVendor: nvidia, SubsystemDevice: "0x1459",
			VendorName: "NVIDIA Corporation", DeviceName: "GA102 High Definition Audio Controller", SubsystemVendorName: "NVIDIA Corporation", IOMMUGroup: group},
	}
}

// l40s is one L40S (a single function) with the vGPU mdev types.
func l40s(id string, group int, types []mdevType) pciFunction {
	return pciFunction{ID: id, Class: "0x030200", Vendor: nvidia, Device: "0x26b9", SubsystemVendor: nvidia, SubsystemDevice: "0x1851",
		VendorName: "NVIDIA Corporation", DeviceName: "AD102GL [L40S]", SubsystemVendorName: "NVIDIA Corporation", IOMMUGroup: group, Mdev: slices.Clone(types)}
}

func hostProfiles() []hostNode {
	l40sTypes := []mdevType{
		{Type: "nvidia-1155", Name: "NVIDIA L40S-12Q", Description: "num_heads=4, frl_config=60, framebuffer=12288M, max_resolution=7680x4320, max_instance=4", Instances: 4},
		{Type: "nvidia-1157", Name: "NVIDIA L40S-24Q", Description: "num_heads=4, frl_config=60, framebuffer=24576M, max_resolution=7680x4320, max_instance=2", Instances: 2},
		{Type: "nvidia-1159", Name: "NVIDIA L40S-48Q", Description: "num_heads=4, frl_config=60, framebuffer=49152M, max_resolution=7680x4320, max_instance=1", Instances: 1},
	}
	return []hostNode{
		{Name: NodeA6000, CPUs: 64, MemBytes: 512 << 30, PCI: append(append(chipset(0), a6000("01", 14)...), a6000("02", 15)...)},
		{Name: NodeH100, CPUs: 96, MemBytes: 1024 << 30, PCI: append(chipset(0),
			pciFunction{ID: "0000:41:00.0", Class: "0x030200", Vendor: nvidia, Device: "0x2331", SubsystemVendor: nvidia, SubsystemDevice: "0x1626",
				VendorName: "NVIDIA Corporation", DeviceName: "GH100 [H100 PCIe]", SubsystemVendorName: "NVIDIA Corporation", IOMMUGroup: 30},
			pciFunction{ID: "0000:42:00.0", Class: "0x020000", Vendor: "0x15b3", Device: "0x1021", SubsystemVendor: "0x15b3", SubsystemDevice: "0x0041",
				VendorName: "Mellanox Technologies", DeviceName: "MT2910 Family [ConnectX-7]", SubsystemVendorName: "Mellanox Technologies", IOMMUGroup: 30},
		)},
		{Name: NodeL40S, CPUs: 64, MemBytes: 768 << 30, PCI: append(chipset(0), l40s("0000:c1:00.0", 40, l40sTypes))},
		{Name: NodeL40SB, CPUs: 64, MemBytes: 768 << 30, PCI: append(chipset(0), l40s("0000:41:00.0", 50, l40sTypes), l40s("0000:61:00.0", 51, l40sTypes))},
		{Name: NodeCPU, CPUs: 32, MemBytes: 128 << 30, PCI: chipset(0)},
	}
}

func pciMappings() []mapping {
	line := func(node, path, id, subsystem string, group int) string {
		return "id=" + id + ",iommugroup=" + strconv.Itoa(group) + ",node=" + node + ",path=" + path + ",subsystem-id=" + subsystem
	}
	return []mapping{
		{ID: MappingA6000First, Opts: map[string]string{"description": "RTX A6000 #0 on pve-a6000"},
			Map: []string{line(NodeA6000, "0000:01:00", "10de:2230", "10de:1459", 14)}},
		{ID: MappingA6000Second, Opts: map[string]string{"description": "RTX A6000 #1 on pve-a6000"},
			Map: []string{line(NodeA6000, "0000:02:00", "10de:2230", "10de:1459", 15)}},
		{ID: MappingL40SVGPU, Opts: map[string]string{"description": "L40S vGPU on pve-l40s", "mdev": "1"},
			Map: []string{line(NodeL40S, "0000:c1:00.0", "10de:26b9", "10de:1851", 40)}},
	}
}
