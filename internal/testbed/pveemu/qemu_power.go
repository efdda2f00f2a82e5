package pveemu

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
)

// vmStatus is GET /nodes/{node}/qemu/{vmid}/status/current.
func (e *Emulator) vmStatus(r *request) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, err := e.allowedVM(r, "VM.Audit")
	if err != nil {
		return nil, err
	}
	out := e.vmSummary(v)
	out["qmpstatus"] = v.status
	out["ha"] = map[string]any{"managed": 0}
	if agentEnabled(v.conf) {
		out["agent"] = 1
	}
	if strings.HasPrefix(v.conf["serial0"], "socket") {
		out["serial"] = 1
	}
	if v.status == "running" {
		machine := "pc-i440fx-10.1+pve0"
		if isQ35(v.conf) {
			machine = "pc-q35-10.1+pve0"
		}
		out["running-machine"] = machine
		out["running-qemu"] = QEMUVersion
	}
	return out, nil
}

// startVMRequest is POST .../status/start: a qmstart task; what can fail
// fails in the task (vm_start), not the request.
func (e *Emulator) startVMRequest(r *request) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, err := e.allowedVM(r, "VM.PowerMgmt")
	if err != nil {
		return nil, err
	}
	if perr := verifyStartParams(r); perr != nil {
		return nil, perr
	}
	return e.startTask(v.node, "qmstart", strconv.Itoa(v.vmid), r.auth, taskWork{run: func(l taskLog) error {
		return e.startVM(v, l)
	}}), nil
}

// startRootParams are vm_start's parameters only root@pam may set
// (API2/Qemu.pm vm_start: $get_root_param).
var startRootParams = []string{"stateuri", "skiplock", "migratedfrom", "migration_type", "migration_network",
	"targetstorage", "force-cpu", "with-conntrack-state", "nets-host-mtu"}

// verifyStartParams checks POST .../status/start's parameters against
// PVE 9.1's schema, then the root-only ones ("Only root may use this
// option." for a set one, as $get_root_param raises it).
func verifyStartParams(r *request) *apiError {
	params := maps.Clone(r.params)
	delete(params, "node")
	delete(params, "vmid")
	if perr := verifyParams(params, vmStartParamTypes); perr != nil {
		return perr
	}
	for _, k := range startRootParams {
		if v := params[k]; v != "" && v != "0" && r.auth.authid != RootUser {
			return paramErr(map[string]string{k: "Only root may use this option."})
		}
	}
	return nil
}

// startVM is PVE::QemuServer::vm_start. Caller holds e.mu.
func (e *Emulator) startVM(v *vm, l taskLog) error {
	if cur, ok := e.st.vms[v.vmid]; !ok || cur != v {
		return configFileMissing(v.node, v.vmid)
	}
	if v.isTemplate() {
		return fmt.Errorf("you can't start a vm if it's a template")
	}
	if lock := v.conf["lock"]; lock != "" {
		return fmt.Errorf("VM is locked (%s)", lock)
	}
	if v.status == "running" {
		return fmt.Errorf("VM %d already running", v.vmid)
	}
	v.applyPending()
	if ci := cloudInitDrive(v); ci != "" {
		l.printf("generating cloud-init ISO")
	}
	devices, err := e.st.startChecks(v, l)
	if err != nil {
		return err
	}
	v.status = "running"
	v.pid = e.st.nextPID()
	v.start = time.Now()
	v.devices = devices
	return nil
}

func cloudInitDrive(v *vm) string {
	for k, val := range v.conf {
		if strings.Contains(val, "-cloudinit") {
			return k
		}
	}
	return ""
}

// stopVM marks v stopped and frees what it held. Caller holds e.mu.
func (v *vm) stop() {
	v.status = "stopped"
	v.pid = 0
	v.devices = nil
}

// stopVMRequest is POST .../status/stop: a qmstop task; a stopped VM
// stays stopped and the task succeeds.
func (e *Emulator) stopVMRequest(r *request) (any, error) {
	return e.powerOff(r, "qmstop", false)
}

// shutdownVMRequest is POST .../status/shutdown: refused in the request
// when the VM is not running ("VM 100 not running").
func (e *Emulator) shutdownVMRequest(r *request) (any, error) {
	return e.powerOff(r, "qmshutdown", true)
}

func (e *Emulator) powerOff(r *request, typ string, mustRun bool) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, err := e.allowedVM(r, "VM.PowerMgmt")
	if err != nil {
		return nil, err
	}
	if mustRun && v.status != "running" {
		return nil, errf("VM %d not running", v.vmid)
	}
	return e.startTask(v.node, typ, strconv.Itoa(v.vmid), r.auth, taskWork{run: func(taskLog) error {
		// vm_stop and vm_shutdown: PVE::QemuConfig->check_lock
		if lock := v.conf["lock"]; lock != "" {
			return fmt.Errorf("VM is locked (%s)", lock)
		}
		v.stop()
		return nil
	}}), nil
}

// deleteVM is DELETE /nodes/{node}/qemu/{vmid} (destroy_vm): a running
// VM is refused in the request; the qmdestroy task removes it and its
// disks.
func (e *Emulator) deleteVM(r *request) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, err := e.allowedVM(r, "VM.Allocate")
	if err != nil {
		return nil, err
	}
	if v.conf["protection"] == "1" {
		return nil, errf("can't remove VM %d - protection mode enabled", v.vmid)
	}
	if v.status == "running" {
		return nil, errf("VM %d is running - destroy failed", v.vmid)
	}
	return e.startTask(v.node, "qmdestroy", strconv.Itoa(v.vmid), r.auth, taskWork{run: func(l taskLog) error {
		// the early checks again, then destroy_vm's check_lock
		if v.status == "running" {
			return fmt.Errorf("VM %d is running - destroy failed", v.vmid)
		}
		if lock := v.conf["lock"]; lock != "" {
			return fmt.Errorf("VM is locked (%s)", lock)
		}
		for k, val := range v.conf {
			if configPrivilege(k) == "VM.Config.Disk" && strings.Contains(val, ":vm-") {
				volume, _, _ := strings.Cut(val, ",")
				_, name, _ := strings.Cut(volume, ":")
				l.printf("  Logical volume \"%s\" successfully removed.", name)
			}
		}
		delete(e.st.vms, v.vmid)
		return nil
	}}), nil
}

// agentInterfaces is GET .../agent/network-get-interfaces: the guest
// agent of a running VM with agent enabled answers with lo and one NIC.
// PVE 9's permission (qemu-server PVE/API2/Qemu/Agent.pm, register_command):
// VM.GuestAgent.Audit or VM.GuestAgent.Unrestricted on /vms/{vmid}.
func (e *Emulator) agentInterfaces(r *request) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, err := e.st.vmOn(r)
	if err != nil {
		return nil, err
	}
	if err := r.auth.check("/vms/"+strconv.Itoa(v.vmid), true, "VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted"); err != nil {
		return nil, err
	}
	if v.status != "running" {
		return nil, errf("VM %d is not running", v.vmid)
	}
	if !agentEnabled(v.conf) {
		return nil, errf("No QEMU guest agent configured")
	}
	mac := strings.ToLower(macFor(v.vmid, "net0"))
	if model, _, _ := strings.Cut(v.conf["net0"], ","); strings.Contains(model, "=") {
		_, m, _ := strings.Cut(model, "=")
		mac = strings.ToLower(m)
	}
	return map[string]any{"result": []map[string]any{
		{"name": "lo", "hardware-address": "00:00:00:00:00:00", "ip-addresses": []map[string]any{
			{"ip-address": "127.0.0.1", "ip-address-type": "ipv4", "prefix": 8},
			{"ip-address": "::1", "ip-address-type": "ipv6", "prefix": 128},
		}},
		{"name": "eth0", "hardware-address": mac, "ip-addresses": []map[string]any{
			{"ip-address": GuestIPv4(v.vmid), "ip-address-type": "ipv4", "prefix": 24},
		}},
	}}, nil
}

// GuestIPv4 is the address the guest agent of VM vmid reports for eth0.
func GuestIPv4(vmid int) string {
	return fmt.Sprintf("10.20.%d.%d", (vmid/250)%250, vmid%250+2)
}
