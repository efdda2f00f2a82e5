package proxmox

import (
	"fmt"
	"strings"
)

// Identity is who the client acts as. User is "root@pam" for the user
// root@pam and for its tokens; TokenID is the token's name ("gpu") or "".
type Identity struct {
	User    string
	TokenID string
	IsToken bool
}

// IsRootPam reports whether PVE treats the caller as root@pam for
// root-only settings such as raw hostpci: qemu-server compares the
// authenticated user to "root@pam", and a token's authuser is
// "root@pam!TOKENID", so no token qualifies.
func (i Identity) IsRootPam() bool { return i.User == "root@pam" && !i.IsToken }

// String is "user@realm" or "user@realm!token".
func (i Identity) String() string {
	if i.IsToken {
		return i.User + "!" + i.TokenID
	}
	return i.User
}

// PCIFunction is one PCI function of a node as /nodes/{node}/hardware/pci
// reports it. IDs are "0x"-prefixed hex as PVE returns them.
type PCIFunction struct {
	Node              string
	Address           string // "0000:01:00.0"
	VendorID          string // "0x10de"
	DeviceID          string
	SubsystemVendorID string
	SubsystemDeviceID string
	Class             string // "0x030000"
	VendorName        string
	DeviceName        string
	IOMMUGroup        int // -1 when PVE reports none
	MdevCapable       bool
}

// MdevType is one mediated device type a PCI function offers.
type MdevType struct {
	Type        string
	Name        string
	Description string
	Available   int
}

// PCIMapping is a cluster PCI resource mapping (/cluster/mapping/pci):
// pve-guest-common PVE/Mapping/PCI.pm's section config. A mapping with
// several entries on one node is a pool: each entry is one alternative,
// and a VM starting with the mapping gets the first one no running VM
// holds (qemu-server PVE/QemuServer/PCI.pm choose_hostpci_devices).
type PCIMapping struct {
	ID, Description      string
	Mdev                 bool
	LiveMigrationCapable bool
	Entries              []PCIMappingEntry
	// Digest is the digest of the mapping file (mapping/pci.cfg) when the
	// mapping was read: an update given it fails if anyone changed the
	// file since. GET /cluster/mapping/pci/{id} and the list carry it.
	Digest string
}

// PCIMappingEntry is one entry of a PCI mapping's map list: a device (or,
// with a ';' list in Path, several devices taken together) on one node.
type PCIMappingEntry struct {
	Node        string
	Path        string // "0000:01:00" (the whole device) or "0000:01:00.0"; a ';' list is one alternative of several
	ID          string // "10de:2230": vendor:device of the path's first function, no "0x"
	SubsystemID string // "10de:1459", or "" when the hardware has none
	IOMMUGroup  int    // -1: none
	Description string // the entry's own description (optional)
}

// Guest is a QEMU VM of the cluster with its hostpci lines.
type Guest struct {
	Node    string
	VMID    int
	Name    string
	Status  string
	HostPCI map[int]string // index -> raw value
	// HostDevices are the devices a running guest got, from the QEMU
	// monitor (VMHostDevices): hostpci index -> "0000:41:00.0", vfio-pci
	// devices with a host address only (not a vGPU's mdev). nil when not
	// running or not read.
	HostDevices map[int]string
}

// GPU is one hostpciN entry: Mapping or PCIAddress (exactly one).
type GPU struct {
	Mapping      string
	PCIAddress   string // "0000:01:00" (all functions) or "0000:01:00.0"
	Mdev         string
	PCIE         bool
	PrimaryGPU   bool
	ROMBar       bool
	AllFunctions bool // with PCIAddress: pass "0000:01:00" rather than "0000:01:00.0"
}

// Clone selects the template a VM is cloned from.
type Clone struct {
	Source string // template name or VMID
	Full   bool
}

// EFIDisk is the efidisk0 of an OVMF VM.
type EFIDisk struct {
	Storage         string
	PreEnrolledKeys bool
}

// Disk is one disk; Interface is its config key ("scsi0", "virtio1").
type Disk struct {
	Interface string
	Storage   string
	SizeGiB   int
}

// Network is netN (N = its index in VMSpec.Networks).
type Network struct {
	Model    string // "virtio"
	Bridge   string
	VLAN     int // 0: untagged
	Firewall bool
}

// CloudInit is the VM's cloud-init drive (ide2) and settings.
type CloudInit struct {
	Storage      string   // where the cloud-init drive goes ("local-lvm")
	User         string   // ciuser
	SSHKeys      []string // sshkeys
	IPConfig     []string // ipconfigN, e.g. "ip=dhcp"
	UserDataFile string   // cicustom user=<volume>, e.g. "local:snippets/gpu.yaml"
}

// VMSpec is a VM as the provider wants it (or, in VM, as PVE reports it).
type VMSpec struct {
	Node      string
	VMID      int
	Name      string
	Clone     *Clone
	Cores     int
	Sockets   int
	CPUType   string
	MemoryMiB int
	Machine   string // "q35", "pc", "pc-q35-8.1", ...
	BIOS      string // "ovmf" | "seabios"
	EFIDisk   *EFIDisk
	Disks     []Disk
	Networks  []Network
	CloudInit *CloudInit
	Tags      []string
	Started   bool
	OnBoot    bool
	GPUs      []GPU
}

// VM is a VM as PVE reports it.
type VM struct {
	VMSpec
	Status  string // "running" | "stopped"
	HostPCI map[int]string
	IPv4    []string
}

// TaskError is a PVE task that ended with an exit status other than OK.
type TaskError struct {
	UPID       string
	Type       string // "qmcreate", "qmstart", ...
	ExitStatus string
	Log        []string // the task log's last lines
}

func (e *TaskError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Proxmox task %s (%s) failed: %s", e.Type, e.UPID, e.ExitStatus)
	if len(e.Log) > 0 {
		b.WriteString("; task log:\n  " + strings.Join(e.Log, "\n  "))
	}
	return b.String()
}
