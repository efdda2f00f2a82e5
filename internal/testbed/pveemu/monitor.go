package pveemu

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// POST /nodes/{node}/qemu/{vmid}/monitor as qemu-server 9.1's
// PVE/API2/Qemu.pm 'monitor' answers it: permission
// ['perm', '/vms/{vmid}', ['Sys.Audit', 'Sys.Modify'], any => 1] (PVE 9
// dropped VM.Monitor), then per command what
// PVE/API2/Qemu/HMPPerms.pm's $hmp_command_perms asks: 'none' (help, ?,
// info), Sys.Modify on / (check_full), root@pam only; a command not in
// the list is root@pam's alone. The VM's config must exist; a VM that is
// not running answers "ERROR: VM 100 not running\n" (hmp_cmd's die,
// caught and returned as the result).

// hmpPerms are the commands of HMPPerms.pm the emulator tells apart:
// every 'none' command, every 'Sys.Modify' one; the rest of the list is
// 'root'.
var (
	hmpNone      = []string{"help", "?", "info"}
	hmpSysModify = []string{"announce_self", "backup_cancel", "balloon", "block_job_cancel", "block_job_complete",
		"block_job_pause", "block_job_resume", "block_job_set_speed", "block_resize", "block_set_io_throttle", "boot_set",
		"c", "calc_dirty_rate", "cancel_vcpu_dirty_limit", "chardev-send-break", "closefd", "commit", "cont", "cpu",
		"delvm", "eject", "exit_preconfig", "expire_password", "getfd", "gpa2hpa", "gpa2hva", "gva2gpa", "i", "loadvm",
		"log", "migrate_cancel", "migrate_continue", "migrate_pause", "migrate_set_capability", "migrate_set_parameter",
		"migrate_start_postcopy", "mouse_button", "mouse_move", "mouse_set", "one-insn-per-tb", "p", "print", "q",
		"qemu-io", "qom-get", "qom-list", "quit", "replay_break", "replay_delete_break", "replay_seek", "ringbuf_read",
		"ringbuf_write", "s", "savevm", "sendkey", "set_link", "set_password", "set_vcpu_dirty_limit",
		"snapshot_blkdev_internal", "snapshot_delete_blkdev_internal", "stop", "stopcapture", "sum", "sync-profile",
		"system_powerdown", "system_reset", "system_wakeup", "trace-event", "x", "x_colo_lost_heartbeat", "xp"}
	hmpRoot = []string{"backup", "block_stream", "change", "chardev-add", "chardev-change", "chardev-remove",
		"client_migrate_info", "device_add", "device_del", "drive_add", "drive_backup", "drive_del", "drive_mirror",
		"dump-guest-memory", "dumpdtb", "gdbserver", "hostfwd_add", "hostfwd_remove", "logfile", "mce", "memsave",
		"migrate", "migrate_incoming", "migrate_recover", "nbd_server_add", "nbd_server_remove", "nbd_server_start",
		"nbd_server_stop", "netdev_add", "netdev_del", "nmi", "o", "object_add", "object_del", "pcie_aer_inject_error",
		"pmemsave", "qom-set", "savevm-end", "savevm-start", "screendump", "snapshot_blkdev", "watchdog_action",
		"wavcapture", "xen-event-inject", "xen-event-list"}
)

var hmpCommandName = regexp.MustCompile(`^\s*(\S+)`)

// monitor is POST /nodes/{node}/qemu/{vmid}/monitor.
func (e *Emulator) monitor(r *request) (any, error) {
	// rest_handler: the method's permission before anything else
	if err := r.auth.check("/vms/"+r.vars["vmid"], true, "Sys.Audit", "Sys.Modify"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.st.checkNode(r.vars["node"]); err != nil {
		return nil, err
	}
	if perr := verifyParams(r.params, map[string]string{"command": "string"}); perr != nil {
		return nil, perr
	}
	command, ok := r.param("command")
	if !ok {
		return nil, paramErr(map[string]string{"command": "property is missing and it is not optional"})
	}
	if command == "" {
		return nil, errf("no command specified")
	}
	m := hmpCommandName.FindStringSubmatch(command)
	if m == nil {
		return nil, errf("unexpected command '%s'", command)
	}
	name := m[1]
	isRoot := r.auth.authid == RootUser
	switch {
	case slices.Contains(hmpNone, name):
	case slices.Contains(hmpSysModify, name):
		if err := r.auth.check("/", false, "Sys.Modify"); err != nil {
			return nil, err
		}
	case slices.Contains(hmpRoot, name):
		if !isRoot {
			return nil, errf("root-only command '%s'", name)
		}
	default:
		if !isRoot {
			return nil, errf("command '%s' non-existent or not assigned a required permission yet, limiting to root user", name)
		}
	}
	v, err := e.st.vmOn(r)
	if err != nil {
		return nil, err
	}
	if v.status != "running" {
		return fmt.Sprintf("ERROR: VM %d not running\n", v.vmid), nil
	}
	return hmpAnswer(v, strings.Fields(command)), nil
}

// hmpAnswer is what QEMU's human monitor prints for the commands the
// emulator knows (output lines end "\r\n", as monitor_puts writes them);
// any other command answers as QEMU does for one it does not know.
func hmpAnswer(v *vm, args []string) string {
	var out string
	switch {
	case len(args) == 2 && args[0] == "info" && args[1] == "qtree":
		out = qtree(v)
	case len(args) == 2 && args[0] == "info" && args[1] == "status":
		out = "VM status: running\n"
	case len(args) == 2 && args[0] == "info" && args[1] == "version":
		out = QEMUVersion + "pve1\n"
	default:
		out = "unknown command: '" + strings.Join(args, " ") + "'\n"
	}
	return strings.ReplaceAll(out, "\n", "\r\n")
}

// qtree is "info qtree" abridged to the host bridge, the buses and the
// passed-through devices, in QEMU's qdev_print format (system/
// qdev-monitor.c: "dev: <type>, id \"<id>\"", properties "name = value"
// two spaces further in, then the PCI bus's print_dev lines). A vfio-pci
// device given host= shows that address and the sysfsdev vfio derives
// from it; an mdev one, given sysfsdev=/sys/bus/mdev/devices/<uuid>,
// shows host as the unset address "ffff:ff:ff.f" (get_pci_host_devaddr).
// Its ids are qemu-server's print_hostpci_devices': "hostpciN", and
// "hostpciN.J" per function of a multifunction device.
func qtree(v *vm) string {
	var b strings.Builder
	w := func(indent int, format string, args ...any) {
		b.WriteString(strings.Repeat(" ", indent) + fmt.Sprintf(format, args...) + "\n")
	}
	q35 := isQ35(v.conf)
	w(0, "bus: main-system-bus")
	w(2, "type System")
	root := "pci.0"
	if q35 {
		root = "pcie.0"
		w(2, "dev: q35-pcihost, id \"\"")
		w(4, "MCFG = -1 (0xffffffffffffffff)")
		w(4, "pci-hole64-size = 34359738368 (32 GiB)")
		w(4, "short_root_bus = 0 (0x0)")
	} else {
		w(2, "dev: i440FX-pcihost, id \"\"")
		w(4, "pci-hole64-size = 2147483648 (2 GiB)")
		w(4, "short_root_bus = 0 (0x0)")
	}
	w(4, "bus: %s", root)
	if q35 {
		w(6, "type PCIE")
	} else {
		w(6, "type PCI")
	}
	for _, i := range slices.Sorted(maps.Keys(v.devices)) {
		d := v.devices[i]
		id := "hostpci" + strconv.Itoa(i)
		pcie := false
		if h, err := parseHostPCI(v.conf[id]); err == nil {
			pcie = h.pcie && q35
		}
		indent := 6
		if pcie {
			// pve-q35 config: ich9-pcie-port-N on pcie.0, the device at 0.0
			port := "ich9-pcie-port-" + strconv.Itoa(i+1)
			w(6, "dev: pcie-root-port, id \"%s\"", port)
			w(8, "chassis = %d (0x%x)", i+1, i+1)
			w(8, "addr = 1c.%d", i)
			w(8, "bus: %s", port)
			w(10, "type PCIE")
			indent = 10
		}
		fns := d.functions
		if d.mdevDevice != "" {
			fns = []string{d.mdevDevice}
		}
		for j, f := range fns {
			devID := id
			if len(fns) > 1 && d.mdevDevice == "" {
				devID += "." + strconv.Itoa(j)
			}
			host, sysfs := f, "/sys/bus/pci/devices/"+f
			if d.mdevDevice != "" {
				host, sysfs = "ffff:ff:ff.f", "/sys/bus/mdev/devices/"+mdevUUID(v.vmid, i)
			}
			addr := fmt.Sprintf("%02x.%d", 0x10+i, j)
			if pcie {
				addr = fmt.Sprintf("00.%d", j)
			}
			w(indent, "dev: vfio-pci, id \"%s\"", devID)
			p := indent + 2
			w(p, "host = \"%s\"", host)
			w(p, "vf-token = \"00000000-0000-0000-0000-000000000000\"")
			w(p, "sysfsdev = \"%s\"", sysfs)
			w(p, "x-pre-copy-dirty-page-tracking = \"on\"")
			w(p, "x-device-dirty-page-tracking = \"on\"")
			w(p, "display = \"off\"")
			w(p, "xres = 0 (0x0)")
			w(p, "yres = 0 (0x0)")
			w(p, "x-intx-mmap-timeout-ms = 1100 (0x44c)")
			w(p, "x-vga = false")
			w(p, "x-req = true")
			migration := "auto"
			if d.migration {
				migration = "on"
			}
			w(p, "enable-migration = \"%s\"", migration)
			w(p, "x-no-mmap = false")
			w(p, "x-balloon-allowed = false")
			w(p, "addr = %s", addr)
			w(p, "romfile = \"\"")
			w(p, "romsize = 4294967295 (0xffffffff)")
			w(p, "rombar = 1 (0x1)")
			w(p, "multifunction = %t", len(fns) > 1 && d.mdevDevice == "" && j == 0)
			w(p, "class %s, addr 00:%s, pci id %s", pciClassName(d.hw[f]), addr, pciIDs(d.hw[f]))
		}
	}
	return b.String()
}

// mdevUUID is qemu-server's PCI.pm generate_mdev_uuid.
func mdevUUID(vmid, index int) string {
	return fmt.Sprintf("%08d-0000-0000-0000-%012d", index, vmid)
}

// pciClassName is the class pci_dev_print names for a function.
func pciClassName(fn pciFunction) string {
	switch {
	case strings.HasPrefix(fn.Class, "0x0300"):
		return "VGA controller"
	case strings.HasPrefix(fn.Class, "0x0302"):
		return "3D controller"
	case strings.HasPrefix(fn.Class, "0x0403"):
		return "Audio controller"
	case len(fn.Class) >= 6:
		return "Class " + fn.Class[2:6]
	}
	return "Class 0000"
}

// pciIDs is "vvvv:dddd (sub ssss:ssss)" as pci_dev_print prints it.
func pciIDs(fn pciFunction) string {
	h := func(s string) string { return strings.TrimPrefix(s, "0x") }
	return fmt.Sprintf("%s:%s (sub %s:%s)", h(fn.Vendor), h(fn.Device), h(fn.SubsystemVendor), h(fn.SubsystemDevice))
}
