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
	"device-id", "vendor-id", "sub-device-id", "sub-vendor-id", "driver"}

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
		case "driver": // qemu-server 9.1: enum vfio, keep
			if v != "vfio" && v != "keep" {
				return h, fmt.Errorf("invalid format - format error\ndriver: value '%s' does not have a value in the enumeration 'vfio, keep'", v)
			}
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
	case key == "memory" || key == "balloon" || key == "shares" || key == "allow-ksm":
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
