package pveemu

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The rules PVE enforces on GPU passthrough, each at the moment PVE does
// (see the package comment for the sources).

// hostpci is a parsed hostpciN value (qemu-server's pve-qm-hostpci format).
type hostpci struct {
	host    string // "0000:01:00" or "0000:01:00.0", ";"-separated alternatives
	mapping string
	mdev    string
	pcie    bool
	xvga    bool
	romfile bool
}

var hostpciKeys = []string{"host", "mapping", "mdev", "pcie", "rombar", "romfile", "x-vga", "legacy-igd",
	"device-id", "vendor-id", "sub-device-id", "sub-vendor-id"}

var pciIDPattern = regexp.MustCompile(`^(?:[a-fA-F0-9]{4,}:)?[a-fA-F0-9]{2}:[a-fA-F0-9]{2}(?:\.[a-fA-F0-9])?$`)

// parseHostPCI parses a value the way PVE::JSONSchema::parse_property_string
// does for pve-qm-hostpci: the default key (host) may go unnamed.
func parseHostPCI(value string) (hostpci, error) {
	var h hostpci
	for i, part := range strings.Split(value, ",") {
		k, v, named := strings.Cut(part, "=")
		if !named {
			if i != 0 {
				return h, fmt.Errorf("value without key, but schema does not define a default key")
			}
			k, v = "host", part
		}
		if !slices.Contains(hostpciKeys, k) {
			return h, fmt.Errorf("invalid format - format error\n%s: property is not defined in schema and the schema does not allow additional properties", k)
		}
		switch k {
		case "host":
			for _, id := range strings.Split(v, ";") {
				if !pciIDPattern.MatchString(id) {
					return h, fmt.Errorf("invalid format - format error\nhost: value does not match the regex pattern")
				}
			}
			h.host = v
		case "mapping":
			h.mapping = v
		case "mdev":
			h.mdev = v
		case "pcie", "x-vga", "rombar", "legacy-igd":
			b, ok := parseBool(v)
			if !ok {
				return h, fmt.Errorf("invalid format - format error\n%s: type check ('boolean') failed - got '%s'", k, v)
			}
			if k == "pcie" {
				h.pcie = b
			}
			if k == "x-vga" {
				h.xvga = b
			}
		case "romfile":
			h.romfile = true
		}
	}
	return h, nil
}

// normalizePCIID adds the default domain: "01:00.0" -> "0000:01:00.0".
func normalizePCIID(id string) string {
	if strings.Count(id, ":") == 1 {
		return "0000:" + id
	}
	return strings.ToLower(id)
}

// checkHostPCIPerm is qemu-server's check_hostpci_perm (PVE/API2/Qemu.pm):
// root@pam alone may set raw devices, the authid compared as a string, so
// that even root@pam's own tokens may not; a mapping needs Mapping.Use on
// /mapping/pci/<id> and VM.Config.HWType on the VM.
func checkHostPCIPerm(id identity, vmid int, opt, value string) error {
	if id.authid == RootUser {
		return nil
	}
	h, err := parseHostPCI(value)
	if err != nil {
		return paramErr(map[string]string{opt: err.Error()})
	}
	switch {
	case h.host != "":
		return errf("only root can set '%s' config for non-mapped devices", opt)
	case h.mapping != "":
		if err := id.check("/mapping/pci/"+h.mapping, false, "Mapping.Use"); err != nil {
			return err
		}
		if err := id.check("/vms/"+strconv.Itoa(vmid), false, "VM.Config.HWType"); err != nil {
			return err
		}
	default:
		return errf("either 'host' or 'mapping' must be set.")
	}
	if h.romfile {
		return paramErr(map[string]string{opt: "only root@pam can set 'romfile' option"})
	}
	return nil
}

// configPrivilege is the privilege qemu-server's
// check_vm_modify_config_perm asks for a config key.
func configPrivilege(key string) string {
	base := strings.TrimRight(key, "0123456789")
	switch {
	case slices.Contains([]string{"cores", "sockets", "cpu", "cpulimit", "cpuunits", "vcpus", "numa", "affinity", "smp"}, key):
		return "VM.Config.CPU"
	case key == "memory" || key == "balloon" || key == "shares":
		return "VM.Config.Memory"
	case base == "net":
		return "VM.Config.Network"
	case slices.Contains([]string{"scsi", "virtio", "sata", "ide", "efidisk", "tpmstate", "unused"}, base):
		return "VM.Config.Disk"
	case slices.Contains([]string{"ciuser", "cipassword", "citype", "ciupgrade", "cicustom", "nameserver", "searchdomain", "sshkeys"}, key) || base == "ipconfig":
		return "VM.Config.Cloudinit"
	case slices.Contains([]string{"name", "description", "onboot", "tags", "agent", "boot", "protection", "startup", "ostype", "localtime", "tablet", "acpi", "kvm", "hotplug"}, key):
		return "VM.Config.Options"
	}
	return "VM.Config.HWType"
}

// fastPlug are the keys a running VM takes at once (qemu-server's
// $fast_plug_option and the cloud-init keys); the default hotplug
// "network,disk,usb" applies those too. Everything else waits in
// [PENDING] until the VM starts again.
func fastPlug(key string) bool {
	base := strings.TrimRight(key, "0123456789")
	switch {
	case slices.Contains([]string{"description", "hookscript", "lock", "migrate_downtime", "migrate_speed", "name", "onboot",
		"protection", "shares", "startup", "tags", "vmstatestorage"}, key):
		return true
	case configPrivilege(key) == "VM.Config.Cloudinit":
		return true
	case slices.Contains([]string{"net", "scsi", "virtio", "sata", "usb", "unused"}, base):
		return true
	}
	return false
}

// isQ35 is PVE::QemuServer::Machine::machine_type_is_q35: "q35",
// "pc-q35-9.2", or the property string "type=q35,viommu=...".
func isQ35(conf map[string]string) bool {
	t, _, _ := strings.Cut(conf["machine"], ",")
	return strings.Contains(strings.TrimPrefix(t, "type="), "q35")
}

// startDevices resolves a VM's hostpci devices at start, as
// PVE::QemuServer::PCI::parse_hostpci_devices does: the q35 check, the
// mapping on this node, the functions behind each address. It returns
// the PCI functions to reserve per device and the mdev requests.
type startDevice struct {
	opt       string
	functions []string
	mdev      string
}

func (s *state) startDevices(v *vm) ([]startDevice, error) {
	q35 := isQ35(v.conf)
	var out []startDevice
	for i := range 16 {
		opt := "hostpci" + strconv.Itoa(i)
		value, ok := v.conf[opt]
		if !ok {
			continue
		}
		h, err := parseHostPCI(value)
		if err != nil {
			return nil, fmt.Errorf("unable to parse value of '%s' - %v", opt, err)
		}
		var path string
		switch {
		case h.host != "" && h.mapping != "":
			return nil, errf("Cannot set both 'host' and 'mapping'.")
		case h.mapping != "":
			m := s.mapping(h.mapping)
			if m != nil {
				for _, entry := range m.Entries {
					if entry.Node == v.node {
						path = entry.Path
					}
				}
			}
			if path == "" {
				return nil, fmt.Errorf("PCI device mapping not found for '%s'", h.mapping)
			}
		case h.host != "":
			path = strings.Split(h.host, ";")[0]
		default:
			return nil, errf("Either 'host' or 'mapping' must be set.")
		}
		node := s.node(v.node)
		var functions []string
		for _, id := range strings.Split(path, ";") {
			id = normalizePCIID(id)
			found := 0
			for _, f := range node.PCI {
				if f.ID == id || (!strings.Contains(id, ".") && strings.HasPrefix(f.ID, id+".")) {
					functions = append(functions, f.ID)
					found++
				}
			}
			if found == 0 {
				return nil, fmt.Errorf("no PCI device found for '%s'", id)
			}
		}
		if len(functions) > 1 && h.mdev != "" {
			return nil, fmt.Errorf("cannot use mediated device with multifunction device")
		}
		// PCI.pm dies without a newline here, so Perl appends the place.
		if !q35 && h.pcie {
			return nil, errf("q35 machine model is not enabled at /usr/share/perl5/PVE/QemuServer/PCI.pm line 510.")
		}
		out = append(out, startDevice{opt: opt, functions: functions, mdev: h.mdev})
	}
	return out, nil
}

// mdevAvailable is how many instances of typ the device has left: its
// total less those running VMs hold; NVIDIA's time-sliced vGPU takes one
// type per GPU, so another type in use leaves none.
func (s *state) mdevAvailable(node, device string, t mdevType) int {
	used := 0
	for _, v := range s.vms {
		if v.node != node || v.status != "running" {
			continue
		}
		for dev, typ := range v.mdevs {
			if dev != device {
				continue
			}
			if typ != t.Type {
				return 0
			}
			used++
		}
	}
	return max(t.Instances-used, 0)
}

// startChecks is vm_start's part that can fail for passthrough: the
// devices, their reservation against running VMs (PCI.pm
// reserve_pci_usage), mdev creation (PCI/Mdev.pm), and OVMF without an
// EFI disk, which PVE starts anyway with a warning (OVMF.pm). It returns
// the mdev instances the VM will hold.
func (s *state) startChecks(v *vm, l taskLog) (map[string]string, error) {
	devices, err := s.startDevices(v)
	if err != nil {
		return nil, err
	}
	if v.conf["bios"] == "ovmf" && v.conf["efidisk0"] == "" {
		l.warn("no efidisk configured! Using temporary efivars disk.")
	}
	for _, d := range devices {
		if d.mdev != "" {
			continue
		}
		for _, f := range d.functions {
			for _, other := range s.vms {
				if other == v || other.status != "running" {
					continue
				}
				if slices.Contains(other.heldFunctions, f) {
					return nil, fmt.Errorf("PCI device '%s' already in use by VMID '%d'", f, other.vmid)
				}
			}
		}
	}
	mdevs := map[string]string{}
	node := s.node(v.node)
	for _, d := range devices {
		if d.mdev == "" {
			continue
		}
		dev := d.functions[0]
		var fn *pciFunction
		for i := range node.PCI {
			if node.PCI[i].ID == dev {
				fn = &node.PCI[i]
			}
		}
		var t *mdevType
		for i := range fn.Mdev {
			if fn.Mdev[i].Type == d.mdev {
				t = &fn.Mdev[i]
			}
		}
		switch {
		case len(fn.Mdev) == 0:
			l.printf("pci device '%s' does not support mediated devices ", dev)
			return nil, fmt.Errorf("could not create mediated device")
		case t == nil:
			l.printf("pci device '%s' has no type '%s'", dev, d.mdev)
			return nil, fmt.Errorf("could not create mediated device")
		case s.mdevAvailable(v.node, dev, *t) < 1:
			l.printf("pci device '%s' has no available instances of '%s'", dev, d.mdev)
			return nil, fmt.Errorf("could not create mediated device")
		}
		mdevs[dev] = d.mdev
	}
	var held []string
	for _, d := range devices {
		if d.mdev == "" {
			held = append(held, d.functions...)
		}
	}
	v.heldFunctions = held
	return mdevs, nil
}
