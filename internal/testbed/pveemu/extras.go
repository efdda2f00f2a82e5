package pveemu

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The calls other PVE clients (Telmate's provider, proxmoxer scripts)
// make around the VM lifecycle: directory indexes, reboot and reset,
// task lists, node and cluster status, storage, pools, the HA list.
func (e *Emulator) extraRoutes() []route {
	return append([]route{
		newRoute("GET", "/cluster/status", e.clusterStatus),
		newRoute("GET", "/cluster/ha/resources", e.haResources),
		newRoute("GET", "/pools", e.pools),
		newRoute("GET", "/nodes/{node}/status", e.nodeStatus),
		newRoute("GET", "/nodes/{node}/storage", e.storageList),
		newRoute("GET", "/nodes/{node}/storage/{storage}/status", e.storageStatus),
		newRoute("GET", "/nodes/{node}/tasks", e.taskList),
		newRoute("GET", "/nodes/{node}/tasks/{upid}", e.taskIndex),
		newRoute("GET", "/nodes/{node}/qemu/{vmid}", e.vmIndex),
		newRoute("GET", "/nodes/{node}/qemu/{vmid}/status", e.vmStatusIndex),
		newRoute("POST", "/nodes/{node}/qemu/{vmid}/status/reboot", e.rebootVMRequest),
		newRoute("POST", "/nodes/{node}/qemu/{vmid}/status/reset", e.resetVMRequest),
	}, append(e.accessRoutes(), e.storageContentRoutes()...)...)
}

func subdirs(key string, names ...string) []map[string]string {
	out := []map[string]string{}
	for _, n := range names {
		out = append(out, map[string]string{key: n})
	}
	return out
}

func (e *Emulator) vmIndex(r *request) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.st.vmOn(r); err != nil {
		return nil, err
	}
	return subdirs("subdir", "config", "pending", "status", "unlink", "vncproxy", "termproxy", "migrate", "resize",
		"move", "rrd", "rrddata", "monitor", "agent", "snapshot", "spiceproxy", "sendkey", "firewall", "mtunnel", "remote_migrate"), nil
}

func (e *Emulator) vmStatusIndex(r *request) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.st.vmOn(r); err != nil {
		return nil, err
	}
	return subdirs("subdir", "current", "start", "stop", "reset", "shutdown", "suspend", "reboot"), nil
}

// rebootVMRequest is POST .../status/reboot: shutdown and start in one
// qmreboot task, which applies pending changes as a start does.
func (e *Emulator) rebootVMRequest(r *request) (any, error) {
	return e.runningVMTask(r, "qmreboot", func(v *vm, l taskLog) error {
		v.stop()
		return e.startVM(v, l)
	})
}

// resetVMRequest is POST .../status/reset: the VM keeps running, pending
// changes stay pending.
func (e *Emulator) resetVMRequest(r *request) (any, error) {
	return e.runningVMTask(r, "qmreset", func(*vm, taskLog) error { return nil })
}

func (e *Emulator) runningVMTask(r *request, typ string, work func(*vm, taskLog) error) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, err := e.allowedVM(r, "VM.PowerMgmt")
	if err != nil {
		return nil, err
	}
	if v.status != "running" {
		return nil, errf("VM %d not running", v.vmid)
	}
	return e.startTask(v.node, typ, strconv.Itoa(v.vmid), r.auth, taskWork{run: func(l taskLog) error {
		if v.status != "running" {
			return errf("VM %d not running", v.vmid)
		}
		return work(v, l)
	}}), nil
}

func (e *Emulator) taskIndex(r *request) (any, error) {
	return subdirs("name", "log", "status"), nil
}

// taskList is GET /nodes/{node}/tasks: the node's tasks, newest first,
// those of the caller unless it has Sys.Audit on the node; filters vmid,
// typefilter, source (archive: ended, active: running), start and limit.
func (e *Emulator) taskList(r *request) (any, error) {
	vmid, _ := r.param("vmid")
	typ, _ := r.param("typefilter")
	source, _ := r.param("source")
	start, limit, perr := r.pageParams()
	if perr != nil {
		return nil, perr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	node := r.vars["node"]
	if err := e.st.checkNode(node); err != nil {
		return nil, err
	}
	audit := r.auth.check("/nodes/"+node, false, "Sys.Audit") == nil
	var list []*task
	for _, t := range e.st.tasks {
		switch {
		case t.node != node, vmid != "" && t.id != vmid, typ != "" && t.typ != typ,
			source == "active" && t.done, (source == "" || source == "archive") && !t.done,
			!audit && !taskVisible(t.auth.authid, r.auth.authid):
			continue
		}
		list = append(list, t)
	}
	slices.SortFunc(list, func(a, b *task) int {
		if a.starttime != b.starttime {
			return int(b.starttime - a.starttime)
		}
		return strings.Compare(b.upid, a.upid)
	})
	out := []map[string]any{}
	for i := start; i < len(list) && i < start+limit; i++ {
		t := list[i]
		item := t.fields()
		if t.done {
			item["status"] = t.exit
			item["endtime"] = t.starttime
		}
		out = append(out, item)
	}
	return out, nil
}

func (e *Emulator) nodeStatus(r *request) (any, error) {
	node := r.vars["node"]
	if err := r.auth.check("/nodes/"+node, false, "Sys.Audit"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.st.checkNode(node); err != nil {
		return nil, err
	}
	n := e.st.node(node)
	return map[string]any{
		"uptime": e.uptime(), "cpu": 0.03, "wait": 0, "loadavg": []string{"0.12", "0.10", "0.08"},
		"cpuinfo":    map[string]any{"cpus": n.CPUs, "cores": n.CPUs / 2, "sockets": 1, "model": "AMD EPYC 9354 32-Core Processor", "mhz": "3250.000", "hvm": "1", "flags": "svm"},
		"memory":     map[string]any{"total": n.MemBytes, "used": n.MemBytes / 10, "free": n.MemBytes - n.MemBytes/10},
		"rootfs":     map[string]any{"total": int64(100) << 30, "used": int64(12) << 30, "avail": int64(88) << 30, "free": int64(88) << 30},
		"swap":       map[string]any{"total": 0, "used": 0, "free": 0},
		"pveversion": "pve-manager/" + Version + "/" + RepoID, "kversion": kernelVersion,
		"boot-info": map[string]any{"mode": "efi", "secureboot": 0},
	}, nil
}

func (e *Emulator) clusterStatus(r *request) (any, error) {
	if err := r.auth.check("/", false, "Sys.Audit"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []map[string]any{{"type": "cluster", "id": "cluster", "name": "gpu-testbed", "nodes": len(e.st.nodes), "quorate": 1, "version": len(e.st.nodes)}}
	for i, n := range e.st.nodes {
		local := 0
		if i == 0 {
			local = 1
		}
		out = append(out, map[string]any{"type": "node", "id": "node/" + n.Name, "name": n.Name, "nodeid": i + 1,
			"ip": "127.0.0." + strconv.Itoa(i+1), "online": 1, "local": local, "level": ""})
	}
	return out, nil
}

func (e *Emulator) haResources(r *request) (any, error) {
	if err := r.auth.check("/", false, "Sys.Audit"); err != nil {
		return nil, err
	}
	return []any{}, nil
}

func (e *Emulator) pools(*request) (any, error) { return []any{}, nil }

// storageEntry is local-lvm as /nodes/{node}/storage and .../status show it.
func storageEntry() map[string]any {
	total, used := int64(1800)<<30, int64(64)<<30
	return map[string]any{"storage": Storage, "type": "lvmthin", "content": "images,rootdir", "active": 1, "enabled": 1,
		"shared": 0, "total": total, "used": used, "avail": total - used, "used_fraction": float64(used) / float64(total)}
}

func (e *Emulator) storageList(r *request) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.st.checkNode(r.vars["node"]); err != nil {
		return nil, err
	}
	out := []map[string]any{}
	if r.auth.check("/storage/"+Storage, true, "Datastore.Audit", "Datastore.AllocateSpace") == nil {
		out = append(out, storageEntry())
	}
	return out, nil
}

func (e *Emulator) storageStatus(r *request) (any, error) {
	storage := r.vars["storage"]
	if err := r.auth.check("/storage/"+storage, true, "Datastore.Audit", "Datastore.AllocateSpace"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.st.checkStorage(r.vars["node"], storage); err != nil {
		return nil, err
	}
	entry := storageEntry()
	delete(entry, "storage")
	out := maps.Clone(entry)
	return out, nil
}

// kernelVersion is uname's answer on a PVE 9.1 node: its default kernel
// series is 6.17 (Proxmox VE 9.1 release notes).
const kernelVersion = "Linux 6.17.2-1-pve #1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1"
