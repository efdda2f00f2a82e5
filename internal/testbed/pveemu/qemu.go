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

var indexedKey = regexp.MustCompile(`^([a-z]+)(\d+)$`)

// paramType is the schema type of a VM parameter, "" for an unknown one.
func paramType(key string) string {
	if t, ok := vmParamTypes[key]; ok {
		return t
	}
	if m := indexedKey.FindStringSubmatch(key); m != nil {
		if n, _ := strconv.Atoi(m[2]); n < 256 {
			return vmParamTypes[m[1]+"[n]"]
		}
	}
	return ""
}

// pathParams are the parameters taken from the URL, not the schema's body.
var pathParams = map[string]bool{"node": true, "vmid": true}

// verifyVMParams is PVE::JSONSchema's parameter verification for VM
// create (create) and config updates: unknown keys, types, hostpci format.
func verifyVMParams(params map[string]string, create bool) *apiError {
	errs := map[string]string{}
	for k, v := range params {
		if k == "node" || (k == "vmid" && !create) {
			continue
		}
		t := paramType(k)
		if t == "" || (create && vmUpdateOnly[k]) || (!create && vmCreateOnly[k]) {
			errs[k] = "property is not defined in schema and the schema does not allow additional properties"
			continue
		}
		switch t {
		case "integer":
			if _, err := strconv.Atoi(v); err != nil {
				errs[k] = fmt.Sprintf("type check ('integer') failed - got '%s'", v)
			}
		case "number":
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				errs[k] = fmt.Sprintf("type check ('number') failed - got '%s'", v)
			}
		case "boolean":
			if _, ok := parseBool(v); !ok {
				errs[k] = fmt.Sprintf("type check ('boolean') failed - got '%s'", v)
			}
		}
		if strings.HasPrefix(k, "hostpci") {
			if _, err := parseHostPCI(v); err != nil {
				errs[k] = err.Error()
			}
		}
	}
	if len(errs) > 0 {
		return paramErr(errs)
	}
	return nil
}

// normalizeValue stores a boolean as PVE's config file does (0/1).
func normalizeValue(key, value string) string {
	if paramType(key) == "boolean" {
		if b, ok := parseBool(value); ok {
			return map[bool]string{true: "1", false: "0"}[b]
		}
	}
	return value
}

// configFileMissing is PVE::QemuConfig->load_config's error.
func configFileMissing(node string, vmid int) *apiError {
	return errf("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", node, vmid)
}

// checkNode answers for a node the cluster does not have as pveproxy
// does when it cannot proxy there.
func (s *state) checkNode(node string) *apiError {
	if s.node(node) == nil {
		return errf("hostname lookup '%s' failed - failed to get address info for: %s: Name or service not known", node, node)
	}
	return nil
}

// vmOn finds {vmid} on {node}. Caller holds e.mu.
func (s *state) vmOn(r *request) (*vm, *apiError) {
	if err := s.checkNode(r.vars["node"]); err != nil {
		return nil, err
	}
	vmid, err := strconv.Atoi(r.vars["vmid"])
	if err != nil || vmid < 100 || vmid > 999999999 {
		return nil, paramErr(map[string]string{"vmid": fmt.Sprintf("type check ('integer') failed - got '%s'", r.vars["vmid"])})
	}
	v, ok := s.vms[vmid]
	if !ok || v.node != r.vars["node"] {
		return nil, configFileMissing(r.vars["node"], vmid)
	}
	return v, nil
}

// allowedVM is the VM the request's path names (vmOn), once the caller
// holds priv on /vms/<vmid>. The caller holds e.mu.
func (e *Emulator) allowedVM(r *request, priv string) (*vm, error) {
	v, err := e.st.vmOn(r)
	if err != nil {
		return nil, err
	}
	if err := r.auth.check("/vms/"+strconv.Itoa(v.vmid), false, priv); err != nil {
		return nil, err
	}
	return v, nil
}

// agentEnabled reads the agent option ("1", "enabled=1,fstrim_cloned_disks=1", ...).
func agentEnabled(conf map[string]string) bool {
	enabled, _ := parseBool(strings.Split(strings.TrimPrefix(conf["agent"], "enabled="), ",")[0])
	return enabled
}

// checkModifyConfigPerm is check_vm_modify_config_perm plus the hostpci
// and bridge checks create runs in the request.
func checkModifyConfigPerm(id identity, vmid int, keys []string) *apiError {
	path := "/vms/" + strconv.Itoa(vmid)
	for _, k := range keys {
		if k == "digest" || k == "delete" || k == "background_delay" || k == "skiplock" || k == "force" || pathParams[k] {
			continue
		}
		if err := id.check(path, false, configPrivilege(k)); err != nil {
			return err
		}
	}
	return nil
}

// checkBridgeAccess is qemu-server's PVE::QemuServer::check_bridge_access
// (create, config updates, clone): for each netN, in key order, a user
// other than root@pam needs pve-guest-common's check_vnet_access: SDN.Use
// on /sdn/zones/localnetwork/<bridge>/<tag> for a tag, on .../<bridge>/<n>
// for each VLAN of trunks, else on /sdn/zones/localnetwork/<bridge>
// (every bridge here is a plain Linux bridge: zone localnetwork).
func checkBridgeAccess(id identity, params map[string]string) *apiError {
	if id.authid == RootUser {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if !netKey.MatchString(k) {
			continue
		}
		if err := checkVnetAccess(id, params[k]); err != nil {
			return err
		}
	}
	return nil
}

var netKey = regexp.MustCompile(`^net\d+$`)

// checkOldBridgeAccess is the update function's check of a NIC's current
// value (Qemu.pm: check_bridge_access on { $opt => $conf->{$opt} }) when
// it is changed or deleted.
func checkOldBridgeAccess(id identity, key, current string) *apiError {
	if current == "" || !netKey.MatchString(key) {
		return nil
	}
	return checkBridgeAccess(id, map[string]string{key: current})
}

// checkVnetAccess is PVE::GuestHelpers::check_vnet_access for a NIC.
func checkVnetAccess(id identity, net string) *apiError {
	bridge := propertyValue(net, "bridge")
	if bridge == "" {
		return nil // no vnet to check for
	}
	zone := "/sdn/zones/localnetwork/" + bridge
	tag, trunks := propertyValue(net, "tag"), propertyValue(net, "trunks")
	if tag != "" && tag != "0" {
		if err := id.check(zone+"/"+tag, false, "SDN.Use"); err != nil {
			return err
		}
	}
	if trunks != "" {
		for _, vlan := range trunkTags(trunks) {
			if err := id.check(zone+"/"+strconv.Itoa(vlan), false, "SDN.Use"); err != nil {
				return err
			}
		}
	}
	if (tag == "" || tag == "0") && trunks == "" {
		return id.check(zone, false, "SDN.Use")
	}
	return nil
}

// trunkTags is GuestHelpers' get_tags_from_trunk: "10;20-22" -> 10, 20,
// 21, 22, sorted as check_vnet_access walks them (as strings).
func trunkTags(trunks string) []int {
	set := map[int]bool{}
	for _, part := range strings.Split(trunks, ";") {
		from, to, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(from)
		if err != nil {
			continue
		}
		b, _ := strconv.Atoi(to)
		if isRange && b > a {
			for n := a; n <= b; n++ {
				set[n] = true
			}
		} else {
			set[a] = true
		}
	}
	out := slices.Collect(maps.Keys(set))
	slices.SortFunc(out, func(a, b int) int { return strings.Compare(strconv.Itoa(a), strconv.Itoa(b)) })
	return out
}

// checkStorageAccess asks for Datastore.AllocateSpace on every storage a
// new disk goes to.
func checkStorageAccess(id identity, params map[string]string) *apiError {
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		if configPrivilege(k) != "VM.Config.Disk" || strings.HasPrefix(k, "unused") {
			continue
		}
		file := ""
		for _, p := range parseProperties(v, "file") {
			if p.key == "file" {
				file = p.value
			}
		}
		storage, _, ok := strings.Cut(file, ":")
		if !ok {
			continue
		}
		if err := id.check("/storage/"+storage, false, "Datastore.AllocateSpace"); err != nil {
			return err
		}
	}
	return nil
}

// propertyValue is key's value in a property string "a=1,key=v".
func propertyValue(value, key string) string {
	for _, part := range strings.Split(value, ",") {
		if k, v, ok := strings.Cut(part, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// listVMs is GET /nodes/{node}/qemu.
func (e *Emulator) listVMs(r *request) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.st.checkNode(r.vars["node"]); err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(e.st.vms)) {
		v := e.st.vms[id]
		if v.node != r.vars["node"] || r.auth.check("/vms/"+strconv.Itoa(id), false, "VM.Audit") != nil {
			continue
		}
		out = append(out, e.vmSummary(v))
	}
	return out, nil
}

// vmSummary is a VM as /nodes/{node}/qemu and /cluster/resources list it.
func (e *Emulator) vmSummary(v *vm) map[string]any {
	out := map[string]any{
		"vmid": v.vmid, "name": v.conf["name"], "status": v.status, "cpus": cpus(v.conf), "maxmem": memBytes(v.conf),
		"mem": 0, "cpu": 0, "uptime": 0, "maxdisk": 0, "disk": 0, "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
	}
	if v.isTemplate() {
		out["template"] = 1
	}
	if tags := v.conf["tags"]; tags != "" {
		out["tags"] = tags
	}
	if lock := v.conf["lock"]; lock != "" {
		out["lock"] = lock
	}
	if v.status == "running" {
		out["pid"] = v.pid
		out["uptime"] = int(time.Since(v.start).Seconds())
		out["mem"] = memBytes(v.conf) / 4
		out["cpu"] = 0.02
	}
	return out
}

func cpus(conf map[string]string) int {
	cores, err := strconv.Atoi(conf["cores"])
	if err != nil {
		cores = 1
	}
	sockets, err := strconv.Atoi(conf["sockets"])
	if err != nil {
		sockets = 1
	}
	if vcpus, err := strconv.Atoi(conf["vcpus"]); err == nil {
		return vcpus
	}
	return cores * sockets
}

// memBytes is the VM's memory in bytes; memory is "4096" or "current=4096".
func memBytes(conf map[string]string) int64 {
	m := conf["memory"]
	if v := propertyValue(m, "current"); v != "" {
		m = v
	}
	mib, err := strconv.ParseInt(strings.Split(m, ",")[0], 10, 64)
	if err != nil {
		mib = 512
	}
	return mib << 20
}

// createVM is POST /nodes/{node}/qemu (PVE/API2/Qemu.pm create_vm): the
// checks in the request, the config written with lock "create" at once,
// the disks allocated by the qmcreate task; start=1 starts the VM in a
// qmstart task of its own once the config is written.
func (e *Emulator) createVM(r *request) (any, error) {
	if _, ok := r.params["vmid"]; !ok {
		return nil, paramErr(map[string]string{"vmid": "property is missing and it is not optional"})
	}
	vmid, _, perr := r.intParam("vmid")
	if perr != nil {
		return nil, perr
	}
	if vmid < 100 || vmid > 999999999 {
		return nil, paramErr(map[string]string{"vmid": "value must have a minimum value of 100"})
	}
	if err := verifyVMParams(r.params, true); err != nil {
		return nil, err
	}
	node := r.vars["node"]
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.st.checkNode(node); err != nil {
		return nil, err
	}
	if other, ok := e.st.vms[vmid]; ok {
		return nil, errf("VM %d already exists on node '%s'", vmid, other.node)
	}
	id := r.auth
	start, _ := r.boolParam("start")
	if start {
		if err := id.check("/vms/"+strconv.Itoa(vmid), false, "VM.PowerMgmt"); err != nil {
			return nil, err
		}
	}
	if err := id.check("/vms/"+strconv.Itoa(vmid), false, "VM.Allocate"); err != nil {
		return nil, err
	}
	conf := map[string]string{}
	for k, v := range r.params {
		if pathParams[k] || vmCreateOnly[k] {
			continue
		}
		conf[k] = normalizeValue(k, v)
	}
	if err := checkStorageAccess(id, conf); err != nil {
		return nil, err
	}
	if err := checkModifyConfigPerm(id, vmid, slices.Collect(maps.Keys(conf))); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if strings.HasPrefix(k, "hostpci") {
			if err := checkHostPCIPerm(id, vmid, k, conf[k]); err != nil {
				return nil, err
			}
		}
	}
	if err := checkBridgeAccess(id, conf); err != nil {
		return nil, err
	}
	v := &vm{node: node, vmid: vmid, status: "stopped", conf: map[string]string{"lock": "create"}}
	e.st.vms[vmid] = v
	return e.startTask(node, "qmcreate", strconv.Itoa(vmid), id, taskWork{
		run: func(l taskLog) error {
			delete(v.conf, "lock")
			for _, k := range slices.Sorted(maps.Keys(conf)) {
				v.conf[k] = allocate(l, v, k, conf[k])
			}
			v.conf["smbios1"] = "uuid=" + uuidFor(vmid, 1)
			v.conf["vmgenid"] = uuidFor(vmid, 2)
			v.conf["meta"] = fmt.Sprintf("creation-qemu=%s,ctime=%d", QEMUVersion, time.Now().Unix())
			if !start {
				return nil
			}
			// Qemu.pm create_vm: "Execute autostart" calls the vm_start
			// API, which forks a qmstart worker of its own; the create
			// task ends OK whatever the start does
			l.printf("Execute autostart")
			e.startTask(node, "qmstart", strconv.Itoa(vmid), id, taskWork{run: func(l taskLog) error {
				return e.startVM(v, l)
			}})
			return nil
		},
		undo: func() {
			if cur, ok := e.st.vms[vmid]; ok && cur == v && v.status != "running" {
				delete(e.st.vms, vmid)
			}
		},
	}), nil
}

// allocate is what create and config updates store for a value, as
// qemu-server prints it back: a NIC gets a MAC address ("virtio=MAC",
// PVE::QemuServer::Network's add_random_macs/print_net); a drive
// (print_drive, the default key "file" bare, the options sorted) on
// "storage:N" gets a new volume of N GiB and its size (format dropped,
// as $create_disks does), on "storage:cloudinit" the VM's cloud-init
// volume with media=cdrom. Other values stay as given.
func allocate(l taskLog, v *vm, key, value string) string {
	switch {
	case netKey.MatchString(key):
		return printNet(v.vmid, key, value)
	case configPrivilege(key) != "VM.Config.Disk" || strings.HasPrefix(key, "unused"):
		return value
	}
	file := ""
	opts := map[string]string{}
	for _, p := range parseProperties(value, "file") {
		if p.key == "file" {
			file = p.value
		} else {
			opts[p.key] = p.value
		}
	}
	storage, size, ok := strings.Cut(file, ":")
	switch {
	case ok && size == "cloudinit":
		name := fmt.Sprintf("vm-%d-cloudinit", v.vmid)
		l.printf("  Logical volume \"%s\" created.", name)
		file = storage + ":" + name
		opts["media"] = "cdrom"
	case ok && newDiskSize.MatchString(size):
		name := fmt.Sprintf("vm-%d-disk-%d", v.vmid, nextDiskIndex(v))
		l.printf("  Logical volume \"%s\" created.", name)
		file = storage + ":" + name
		delete(opts, "format")
		gib, _ := strconv.ParseFloat(size, 64)
		opts["size"] = formatSize(int64(gib*(1<<20)) << 10)
		if key == "efidisk0" {
			opts["size"] = "4M"
		}
	}
	return printProperties(file, opts)
}

// newDiskSize is qemu-server's NEW_DISK_RE's size: GiB, maybe fractional.
var newDiskSize = regexp.MustCompile(`^\d+(\.\d+)?$`)

// printNet is a NIC as print_net writes it: "model=MAC" first (a MAC
// generated when none is given), then the other options sorted.
func printNet(vmid int, key, value string) string {
	model, mac := "", ""
	opts := map[string]string{}
	for _, p := range parseProperties(value, "model") {
		switch {
		case p.key == "model":
			model = p.value
		case p.key == "macaddr":
			mac = p.value
		case nicModels[p.key]:
			model, mac = p.key, p.value
		default:
			opts[p.key] = p.value
		}
	}
	if mac == "" {
		mac = macFor(vmid, key)
	}
	return printProperties(model+"="+mac, opts)
}

// nicModels are qemu-server's $nic_model_list, each a key alias of model
// whose value is the MAC address.
var nicModels = map[string]bool{
	"e1000": true, "e1000-82540em": true, "e1000-82544gc": true, "e1000-82545em": true, "e1000e": true, "i82551": true,
	"i82557b": true, "i82559er": true, "ne2k_isa": true, "ne2k_pci": true, "pcnet": true, "rtl8139": true, "virtio": true, "vmxnet3": true,
}

func nextDiskIndex(v *vm) int {
	n := 0
	for _, val := range v.conf {
		if strings.Contains(val, fmt.Sprintf("vm-%d-disk-", v.vmid)) {
			n++
		}
	}
	return n
}

func macFor(vmid int, key string) string {
	n, _ := strconv.Atoi(strings.TrimPrefix(key, "net"))
	return fmt.Sprintf("BC:24:11:%02X:%02X:%02X", (vmid>>8)&0xff, vmid&0xff, n)
}

func uuidFor(vmid, n int) string {
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", vmid, n, vmid&0xfff, n&0xfff, vmid*1000+n)
}

// cloneVM is POST /nodes/{node}/qemu/{vmid}/clone (clone_vm): a linked
// clone of a template by default, a full one with full=1; only to the
// same node, since the disks are on local storage.
func (e *Emulator) cloneVM(r *request) (any, error) {
	if _, ok := r.params["newid"]; !ok {
		return nil, paramErr(map[string]string{"newid": "property is missing and it is not optional"})
	}
	newid, _, perr := r.intParam("newid")
	if perr != nil {
		return nil, perr
	}
	full, perr := r.boolParam("full")
	if perr != nil {
		return nil, perr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	src, err := e.st.vmOn(r)
	if err != nil {
		return nil, err
	}
	id := r.auth
	if err := id.check("/vms/"+strconv.Itoa(src.vmid), false, "VM.Clone"); err != nil {
		return nil, err
	}
	if err := id.check("/vms/"+strconv.Itoa(newid), false, "VM.Allocate"); err != nil {
		return nil, err
	}
	if _, set := r.params["full"]; !set {
		full = !src.isTemplate()
	}
	storage, _ := r.param("storage")
	if storage != "" && !full {
		return nil, errf("parameter 'storage' not allowed for linked clones")
	}
	if target, _ := r.param("target"); target != "" && target != src.node {
		if err := e.st.checkNode(target); err != nil {
			return nil, err
		}
		return nil, errf("can't clone VM to node '%s' (VM uses local storage)", target)
	}
	if _, ok := e.st.vms[newid]; ok {
		return nil, errf("unable to create VM %d: config file already exists", newid)
	}
	if src.conf["lock"] != "" {
		return nil, errf("VM is locked (%s)", src.conf["lock"])
	}
	if !full && !src.isTemplate() {
		// lvmthin clones only base volumes: a template's
		for _, k := range slices.Sorted(maps.Keys(src.conf)) {
			if configPrivilege(k) == "VM.Config.Disk" && strings.Contains(src.conf[k], ":vm-") && !strings.Contains(src.conf[k], "-cloudinit") {
				return nil, errf("Linked clone feature is not supported for drive '%s'", k)
			}
		}
	}
	for k, val := range src.conf {
		if strings.HasPrefix(k, "hostpci") {
			if h, _ := parseHostPCI(val); h.mapping != "" {
				if err := id.check("/mapping/pci/"+h.mapping, false, "Mapping.Use"); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := checkBridgeAccess(id, src.conf); err != nil {
		return nil, err
	}
	name, _ := r.param("name")
	if name == "" {
		name = "Copy-of-VM-" + src.conf["name"]
	}
	v := &vm{node: src.node, vmid: newid, status: "stopped", conf: map[string]string{"lock": "clone"}}
	e.st.vms[newid] = v
	return e.startTask(src.node, "qmclone", strconv.Itoa(src.vmid), id, taskWork{
		run: func(l taskLog) error {
			conf := map[string]string{}
			disk := 0
			for _, k := range slices.Sorted(maps.Keys(src.conf)) {
				val := src.conf[k]
				switch {
				case k == "template" || k == "lock" || strings.HasPrefix(k, "unused"):
					continue
				case strings.HasPrefix(k, "net"):
					model, rest, _ := strings.Cut(val, ",")
					m, _, _ := strings.Cut(model, "=")
					val = m + "=" + macFor(newid, k)
					if rest != "" {
						val += "," + rest
					}
				case configPrivilege(k) == "VM.Config.Disk" && strings.Contains(val, ":"):
					volume, rest, _ := strings.Cut(val, ",")
					st, vol, _ := strings.Cut(volume, ":")
					if strings.HasSuffix(vol, "-cloudinit") {
						vol = fmt.Sprintf("vm-%d-cloudinit", newid)
					} else if full {
						l.printf("create full clone of drive %s (%s)", k, volume)
						vol = fmt.Sprintf("vm-%d-disk-%d", newid, disk)
						disk++
					} else {
						// LVM-thin names a linked clone like any disk of the VM
						// (pve-storage LvmThinPlugin.pm clone_image returns the
						// free name); directory storages would write "base/vm".
						l.printf("create linked clone of drive %s (%s)", k, volume)
						vol = fmt.Sprintf("vm-%d-disk-%d", newid, disk)
						disk++
					}
					if storage != "" {
						st = storage
					}
					val = st + ":" + vol
					if rest != "" {
						val += "," + rest
					}
				}
				conf[k] = val
			}
			conf["name"] = name
			if d, ok := r.param("description"); ok {
				conf["description"] = d
			}
			conf["smbios1"] = "uuid=" + uuidFor(newid, 1)
			conf["vmgenid"] = uuidFor(newid, 2)
			v.conf = conf
			return nil
		},
		undo: func() {
			if cur, ok := e.st.vms[newid]; ok && cur == v {
				delete(e.st.vms, newid)
			}
		},
	}), nil
}

// vmConfig is GET /nodes/{node}/qemu/{vmid}/config: the config with
// pending values applied (current=1: without), values typed by the schema
// (integers and booleans as JSON numbers), and its digest.
func (e *Emulator) vmConfig(r *request) (any, error) {
	current, perr := r.boolParam("current")
	if perr != nil {
		return nil, perr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	v, err := e.allowedVM(r, "VM.Audit")
	if err != nil {
		return nil, err
	}
	conf := maps.Clone(v.conf)
	if !current {
		for k := range v.pdel {
			delete(conf, k)
		}
		maps.Copy(conf, v.pend)
	}
	out := map[string]any{"digest": v.digest()}
	for k, val := range conf {
		out[k] = typedValue(k, val)
	}
	return out, nil
}

// typedValue is a config value as PVE's JSON has it.
func typedValue(key, value string) any {
	switch paramType(key) {
	case "integer", "boolean":
		if n, err := strconv.Atoi(value); err == nil {
			return n
		}
	case "number":
		if f, err := strconv.ParseFloat(value, 64); err == nil {
			return f
		}
	}
	return value
}

// vmPending is GET /nodes/{node}/qemu/{vmid}/pending.
func (e *Emulator) vmPending(r *request) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, err := e.allowedVM(r, "VM.Audit")
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for k := range v.conf {
		keys[k] = true
	}
	for k := range v.pend {
		keys[k] = true
	}
	for k := range v.pdel {
		keys[k] = true
	}
	out := []map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		item := map[string]any{"key": k}
		if val, ok := v.conf[k]; ok {
			item["value"] = typedValue(k, val)
		}
		if val, ok := v.pend[k]; ok {
			item["pending"] = typedValue(k, val)
		}
		if v.pdel[k] {
			item["delete"] = 1
		}
		out = append(out, item)
	}
	return out, nil
}
