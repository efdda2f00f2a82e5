package pveemu

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// routes are the API calls the emulator answers.
func (e *Emulator) routes() []route {
	ticket := newRoute("POST", "/access/ticket", e.createTicket)
	ticket.open = true
	return append([]route{
		ticket,
		newRoute("GET", "/access/permissions", e.permissions),
		newRoute("GET", "/version", e.version),
		newRoute("GET", "/cluster/nextid", e.nextID),
		newRoute("GET", "/cluster/resources", e.resources),
		newRoute("GET", "/cluster/ha/resources/{sid}", e.haResource),
		newRoute("GET", "/cluster/mapping/pci", e.listMappings),
		newRoute("POST", "/cluster/mapping/pci", e.createMapping),
		newRoute("GET", "/cluster/mapping/pci/{id}", e.getMapping),
		newRoute("PUT", "/cluster/mapping/pci/{id}", e.updateMapping),
		newRoute("DELETE", "/cluster/mapping/pci/{id}", e.deleteMapping),
		newRoute("GET", "/nodes", e.listNodes),
		newRoute("GET", "/nodes/{node}/hardware/pci", e.hardwarePCI),
		newRoute("GET", "/nodes/{node}/hardware/pci/{pci-id-or-mapping}/mdev", e.mdevTypes),
		newRoute("GET", "/nodes/{node}/qemu", e.listVMs),
		newRoute("POST", "/nodes/{node}/qemu", e.createVM),
		newRoute("DELETE", "/nodes/{node}/qemu/{vmid}", e.deleteVM),
		newRoute("POST", "/nodes/{node}/qemu/{vmid}/clone", e.cloneVM),
		newRoute("GET", "/nodes/{node}/qemu/{vmid}/config", e.vmConfig),
		newRoute("POST", "/nodes/{node}/qemu/{vmid}/config", e.updateConfigAsync),
		newRoute("PUT", "/nodes/{node}/qemu/{vmid}/config", e.updateConfigSync),
		newRoute("GET", "/nodes/{node}/qemu/{vmid}/pending", e.vmPending),
		newRoute("GET", "/nodes/{node}/qemu/{vmid}/status/current", e.vmStatus),
		newRoute("POST", "/nodes/{node}/qemu/{vmid}/status/start", e.startVMRequest),
		newRoute("POST", "/nodes/{node}/qemu/{vmid}/status/stop", e.stopVMRequest),
		newRoute("POST", "/nodes/{node}/qemu/{vmid}/status/shutdown", e.shutdownVMRequest),
		newRoute("GET", "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces", e.agentInterfaces),
		newRoute("POST", "/nodes/{node}/qemu/{vmid}/monitor", e.monitor),
		newRoute("GET", "/nodes/{node}/tasks/{upid}/status", e.taskStatus),
		newRoute("GET", "/nodes/{node}/tasks/{upid}/log", e.taskLogLines),
	}, e.extraRoutes()...)
}

// version is GET /version.
func (e *Emulator) version(*request) (any, error) {
	return map[string]any{"version": Version, "release": Release, "repoid": RepoID}, nil
}

// nextID is GET /cluster/nextid: the lowest free VMID from 100, or the
// asked one if free; PVE answers it as a string.
func (e *Emulator) nextID(r *request) (any, error) {
	want, set, perr := r.intParam("vmid")
	if perr != nil {
		return nil, perr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if set {
		if _, used := e.st.vms[want]; used {
			return nil, paramErr(map[string]string{"vmid": "VM " + strconv.Itoa(want) + " already exists"})
		}
		return strconv.Itoa(want), nil
	}
	for id := 100; ; id++ {
		if _, used := e.st.vms[id]; !used {
			return strconv.Itoa(id), nil
		}
	}
}

func (e *Emulator) uptime() int { return int(time.Since(e.st.bootAt).Seconds()) + 86400 }

func (e *Emulator) nodeEntry(n *hostNode) map[string]any {
	return map[string]any{
		"node": n.Name, "id": "node/" + n.Name, "type": "node", "status": "online", "level": "",
		"maxcpu": n.CPUs, "cpu": 0.03, "maxmem": n.MemBytes, "mem": n.MemBytes / 10,
		"maxdisk": int64(100) << 30, "disk": int64(12) << 30, "uptime": e.uptime(),
		"ssl_fingerprint": "5B:7C:A3:E0:12:9F:44:6D:0E:C1:88:2A:FB:37:90:5D:6E:21:B4:CC:09:71:3E:8A:D2:F6:15:4B:A0:C8:33:7E",
	}
}

// listNodes is GET /nodes.
func (e *Emulator) listNodes(r *request) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []map[string]any{}
	for i := range e.st.nodes {
		n := &e.st.nodes[i]
		entry := e.nodeEntry(n)
		delete(entry, "type")
		if r.auth.check("/nodes/"+n.Name, false, "Sys.Audit") != nil {
			entry = map[string]any{"node": n.Name, "id": "node/" + n.Name, "status": "online"}
		}
		out = append(out, entry)
	}
	return out, nil
}

// resources is GET /cluster/resources (type: vm, node, storage); each
// entry only where the caller may audit it.
func (e *Emulator) resources(r *request) (any, error) {
	typ, _ := r.param("type")
	switch typ {
	case "", "vm", "node", "storage", "sdn", "pool":
	default:
		return nil, paramErr(map[string]string{"type": "value '" + typ + "' does not have a value in the enumeration 'vm, storage, node, sdn'"})
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []map[string]any{}
	if typ == "" || typ == "vm" {
		for _, id := range slices.Sorted(maps.Keys(e.st.vms)) {
			v := e.st.vms[id]
			if r.auth.check("/vms/"+strconv.Itoa(id), false, "VM.Audit") != nil {
				continue
			}
			entry := e.vmSummary(v)
			entry["id"] = "qemu/" + strconv.Itoa(id)
			entry["type"] = "qemu"
			entry["node"] = v.node
			entry["maxcpu"] = entry["cpus"]
			delete(entry, "cpus")
			delete(entry, "pid")
			entry["template"] = 0
			if v.isTemplate() {
				entry["template"] = 1
			}
			out = append(out, entry)
		}
	}
	if typ == "" || typ == "node" {
		for i := range e.st.nodes {
			n := &e.st.nodes[i]
			if r.auth.check("/nodes/"+n.Name, false, "Sys.Audit") == nil {
				entry := e.nodeEntry(n)
				delete(entry, "ssl_fingerprint")
				entry["cgroup-mode"] = 2
				out = append(out, entry)
			}
		}
	}
	if typ == "" || typ == "storage" {
		for i := range e.st.nodes {
			n := &e.st.nodes[i]
			if r.auth.check("/storage/"+Storage, true, "Datastore.Audit", "Datastore.AllocateSpace") != nil {
				continue
			}
			out = append(out, map[string]any{
				"id": "storage/" + n.Name + "/" + Storage, "type": "storage", "node": n.Name, "storage": Storage,
				"status": "available", "plugintype": "lvmthin", "content": "images,rootdir", "shared": 0,
				"maxdisk": int64(1800) << 30, "disk": int64(64) << 30,
			})
		}
	}
	return out, nil
}

// haResource is GET /cluster/ha/resources/{sid}: no VM is HA-managed, so
// it answers as PVE does for an absent one.
func (e *Emulator) haResource(r *request) (any, error) {
	if err := r.auth.check("/", false, "Sys.Audit"); err != nil {
		return nil, err
	}
	sid := r.vars["sid"]
	if !strings.Contains(sid, ":") {
		sid = "vm:" + sid
	}
	return nil, errf("no such resource '%s'", sid)
}

// hardwarePCI is GET /nodes/{node}/hardware/pci: the node's PCI functions
// but those whose class starts with an entry of pci-class-blacklist
// (default "05;06;0b": memory, bridges, processors).
func (e *Emulator) hardwarePCI(r *request) (any, error) {
	if err := r.auth.check("/", true, "Sys.Audit", "Sys.Modify"); err != nil {
		return nil, err
	}
	blacklist := []string{"05", "06", "0b"}
	if b, ok := r.param("pci-class-blacklist"); ok {
		blacklist = strings.FieldsFunc(b, func(c rune) bool { return c == ';' || c == ',' })
	}
	verbose := true
	if v, ok := r.param("verbose"); ok {
		verbose, _ = parseBool(v)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.st.checkNode(r.vars["node"]); err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, f := range e.st.node(r.vars["node"]).PCI {
		class := strings.TrimPrefix(f.Class, "0x")
		if slices.ContainsFunc(blacklist, func(p string) bool { return strings.HasPrefix(class, p) }) {
			continue
		}
		entry := map[string]any{
			"id": f.ID, "class": f.Class, "vendor": f.Vendor, "device": f.Device,
			"subsystem_vendor": f.SubsystemVendor, "subsystem_device": f.SubsystemDevice, "iommugroup": f.IOMMUGroup,
		}
		if len(f.Mdev) > 0 {
			entry["mdev"] = 1
		}
		if verbose {
			for k, v := range map[string]string{"vendor_name": f.VendorName, "device_name": f.DeviceName,
				"subsystem_vendor_name": f.SubsystemVendorName, "subsystem_device_name": f.SubsystemDeviceName} {
				if v != "" {
					entry[k] = v
				}
			}
		}
		out = append(out, entry)
	}
	return out, nil
}

// mdevIDPattern is the PCI ID branch of pve-manager's
// API2/Hardware/PCI.pm 'mdevscan' (the function is required).
var mdevIDPattern = regexp.MustCompile(`^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]$`)

// mappingMdevTypes is 'mdevscan' for a mapping: the types of each of its
// devices on the node (a ';' path skipped), the first device's entry of
// a type winning, sorted by type; an unknown mapping has none.
func (s *state) mappingMdevTypes(id, node string) []map[string]any {
	out := []map[string]any{}
	m := s.mapping(id)
	if m == nil {
		return out
	}
	seen := map[string]bool{}
	for _, e := range m.onNode(node) {
		if strings.Contains(e.Path, ";") {
			continue
		}
		f := s.node(node).function(normalizePCIID(e.Path))
		if f == nil {
			continue
		}
		for _, t := range f.Mdev {
			if !seen[t.Type] {
				seen[t.Type] = true
				out = append(out, map[string]any{"type": t.Type, "name": t.Name, "description": t.Description,
					"available": s.mdevAvailable(node, f.ID, t)})
			}
		}
	}
	slices.SortFunc(out, func(a, b map[string]any) int { return strings.Compare(fmt.Sprint(a["type"]), fmt.Sprint(b["type"])) })
	return out
}

// mdevTypes is GET /nodes/{node}/hardware/pci/{pci-id-or-mapping}/mdev.
func (e *Emulator) mdevTypes(r *request) (any, error) {
	if err := r.auth.check("/", true, "Sys.Audit", "Sys.Modify"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	node := r.vars["node"]
	if err := e.st.checkNode(node); err != nil {
		return nil, err
	}
	id := r.vars["pci-id-or-mapping"]
	if !mdevIDPattern.MatchString(id) {
		return e.st.mappingMdevTypes(id, node), nil
	}
	id = normalizePCIID(id)
	if !strings.Contains(id, ".") {
		id += ".0"
	}
	for _, f := range e.st.node(node).PCI {
		if f.ID != id {
			continue
		}
		out := []map[string]any{}
		for _, t := range f.Mdev {
			out = append(out, map[string]any{"type": t.Type, "name": t.Name, "description": t.Description,
				"available": e.st.mdevAvailable(node, f.ID, t)})
		}
		return out, nil
	}
	return nil, errf("no PCI device found for '%s'", id)
}
