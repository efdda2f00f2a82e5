package pveemu

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// updateConfigAsync is POST /nodes/{node}/qemu/{vmid}/config: a qmconfig
// task whose worker does the update, so the hostpci permission check and
// the digest check fail the task, not the request.
func (e *Emulator) updateConfigAsync(r *request) (any, error) { return e.updateConfig(r, false) }

// updateConfigSync is PUT /nodes/{node}/qemu/{vmid}/config: the same
// update inside the request, which answers null or the error.
func (e *Emulator) updateConfigSync(r *request) (any, error) { return e.updateConfig(r, true) }

// updateConfig is qemu-server's $update_vm_api.
func (e *Emulator) updateConfig(r *request, sync bool) (any, error) {
	if err := verifyVMParams(r.params, false); err != nil {
		return nil, err
	}
	digest, _ := r.param("digest")
	var deletes []string
	if d, ok := r.param("delete"); ok {
		for _, k := range strings.FieldsFunc(d, func(c rune) bool { return c == ',' || c == ';' || c == ' ' || c == '\x00' }) {
			if paramType(k) == "" {
				return nil, paramErr(map[string]string{"delete": "invalid format - format error\ndelete: value '" + k + "' does not look like a valid config key"})
			}
			deletes = append(deletes, k)
		}
	}
	set := map[string]string{}
	for k, v := range r.params {
		if pathParams[k] || vmUpdateOnly[k] {
			continue
		}
		set[k] = normalizeValue(k, v)
	}
	for _, k := range deletes {
		if _, both := set[k]; both {
			return nil, errf("unable to delete '%s' - option is also set", k)
		}
	}
	if len(set) == 0 && len(deletes) == 0 {
		if _, revert := r.params["revert"]; !revert {
			return nil, errf("no options specified")
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	v, err := e.st.vmOn(r)
	if err != nil {
		return nil, err
	}
	id := r.auth
	vmPath := "/vms/" + strconv.Itoa(v.vmid)
	if err := id.check(vmPath, true, "VM.Config.Disk", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory",
		"VM.Config.Network", "VM.Config.HWType", "VM.Config.Options", "VM.Config.Cloudinit"); err != nil {
		return nil, err
	}
	if err := checkModifyConfigPerm(id, v.vmid, deletes); err != nil {
		return nil, err
	}
	if err := checkModifyConfigPerm(id, v.vmid, slices.Collect(maps.Keys(set))); err != nil {
		return nil, err
	}
	if err := checkStorageAccess(id, set); err != nil {
		return nil, err
	}
	if err := checkBridgeAccess(id, set); err != nil {
		return nil, err
	}
	update := func(l taskLog) error {
		if digest != "" && digest != v.digest() {
			return errf("checksum mismatch (file change by other user?)")
		}
		if lock := v.conf["lock"]; lock != "" {
			return errf("VM is locked (%s)", lock)
		}
		for _, k := range deletes {
			val, inConf := v.conf[k]
			if p, inPend := v.pend[k]; inPend {
				val = p
			}
			if !inConf && v.pend[k] == "" {
				l.printf("cannot delete '%s' - not set in current configuration!", k)
				continue
			}
			if strings.HasPrefix(k, "hostpci") {
				if err := checkHostPCIPerm(id, v.vmid, k, val); err != nil {
					return err
				}
			}
			// Qemu.pm's update function: removing a NIC needs SDN.Use on
			// its current bridge
			if err := checkOldBridgeAccess(id, k, v.conf[k]); err != nil {
				return err
			}
			delete(v.pend, k)
			if v.status == "running" && !fastPlug(k) {
				if v.pdel == nil {
					v.pdel = map[string]bool{}
				}
				v.pdel[k] = true
			} else {
				delete(v.conf, k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(set)) {
			if strings.HasPrefix(k, "hostpci") {
				if old, ok := v.conf[k]; ok {
					if err := checkHostPCIPerm(id, v.vmid, k, old); err != nil {
						return err
					}
				}
				if err := checkHostPCIPerm(id, v.vmid, k, set[k]); err != nil {
					return err
				}
			}
			// and changing one SDN.Use on its current bridge too
			if err := checkOldBridgeAccess(id, k, v.conf[k]); err != nil {
				return err
			}
			val := allocate(l, v, k, set[k])
			delete(v.pdel, k)
			if v.status == "running" && !fastPlug(k) {
				if v.pend == nil {
					v.pend = map[string]string{}
				}
				v.pend[k] = val
			} else {
				v.conf[k] = val
				delete(v.pend, k)
			}
		}
		return nil
	}
	if sync {
		var discard task
		if err := update(taskLog{&discard}); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return e.startTask(v.node, "qmconfig", strconv.Itoa(v.vmid), id, taskWork{run: func(l taskLog) error {
		if _, ok := e.st.vms[v.vmid]; !ok {
			return configFileMissing(v.node, v.vmid)
		}
		l.printf("update VM %d: %s", v.vmid, paramSummary(set, deletes))
		return update(l)
	}}), nil
}

// paramSummary is the "update VM" line of a qmconfig task log, with
// cipassword hidden as qemu-server hides it.
func paramSummary(set map[string]string, deletes []string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(set)) {
		v := set[k]
		if k == "cipassword" {
			v = "<hidden>"
		}
		parts = append(parts, "-"+k+" "+v)
	}
	if len(deletes) > 0 {
		parts = append(parts, "-delete "+strings.Join(deletes, ","))
	}
	return strings.Join(parts, " ")
}
