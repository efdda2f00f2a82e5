package pveemu

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The volumes of local-lvm (an LVM-thin pool, volume group "pve") as
// pve-storage's PVE/API2/Storage/Content.pm shows them: a node's volumes
// are the disks its VMs' configs name (current and pending), sized by
// their size= option; a cloud-init volume is 4 MiB, as qemu-server
// allocates it.
func (e *Emulator) storageContentRoutes() []route {
	return []route{
		newRoute("GET", "/nodes/{node}/storage/{storage}/content", e.storageContent),
		newRoute("GET", "/nodes/{node}/storage/{storage}/content/{volume}", e.volumeInfo),
	}
}

// lvmThinVG is local-lvm's volume group, where its volumes' paths are.
const lvmThinVG = "pve"

// volume is one LVM-thin volume: its name, owner VM and size in bytes.
type volume struct {
	name  string
	owner int
	size  int64
}

// volumeIDPattern is PVE::Storage::Plugin::parse_volume_id.
var volumeIDPattern = regexp.MustCompile(`(?i)^([a-z][a-z0-9\-_.]*[a-z0-9]):(.+)$`)

// lvmName is PVE::Storage::Plugin::parse_lvm_name's pattern;
// lvmThinVolname LvmThinPlugin::parse_volname's (owner VM in group 3).
var (
	lvmName        = regexp.MustCompile(`(?i)^[a-z0-9][a-z0-9\-_.]*[a-z0-9]$`)
	lvmThinVolname = regexp.MustCompile(`^((vm|base)-(\d+)-\S+)$`)
)

// volumes are the volumes of local-lvm on node, by name. Caller holds e.mu.
func (s *state) volumes(node string) map[string]volume {
	out := map[string]volume{}
	for _, v := range s.vms {
		if v.node != node {
			continue
		}
		for _, conf := range []map[string]string{v.conf, v.pend} {
			for k, val := range conf {
				if configPrivilege(k) != "VM.Config.Disk" {
					continue
				}
				spec, size := "", ""
				for _, p := range parseProperties(val, "file") {
					switch p.key {
					case "file":
						spec = p.value
					case "size":
						size = p.value
					}
				}
				m := volumeIDPattern.FindStringSubmatch(spec)
				if m == nil || m[1] != Storage {
					continue
				}
				name := m[2]
				nm := lvmThinVolname.FindStringSubmatch(name)
				if nm == nil || !lvmName.MatchString(name) {
					continue
				}
				owner, _ := strconv.Atoi(nm[3])
				bytes := sizeBytes(size)
				if strings.HasSuffix(name, "-cloudinit") {
					bytes = 4 << 20
				}
				out[name] = volume{name: name, owner: owner, size: bytes}
			}
		}
	}
	return out
}

// sizeBytes reads a disk's size option ("32G", "4M", "3584M", "512K").
func sizeBytes(s string) int64 {
	if s == "" {
		return 0
	}
	unit := int64(1)
	switch s[len(s)-1] {
	case 'K':
		unit = 1 << 10
	case 'M':
		unit = 1 << 20
	case 'G':
		unit = 1 << 30
	case 'T':
		unit = 1 << 40
	}
	if unit > 1 {
		s = s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return int64(f * float64(unit))
}

// checkVolumeAccess is PVE::Storage::check_volume_access for a VM image
// with an owner: Datastore.Allocate on the storage, or Datastore.Audit on
// it and VM.Config.Disk on the owner.
func checkVolumeAccess(id identity, storage string, owner int) *apiError {
	if id.check("/storage/"+storage, false, "Datastore.Allocate") == nil {
		return nil
	}
	if err := id.check("/storage/"+storage, false, "Datastore.Audit"); err != nil {
		return err
	}
	return id.check("/vms/"+strconv.Itoa(owner), false, "VM.Config.Disk")
}

// storageContent is GET /nodes/{node}/storage/{storage}/content
// (Content.pm 'index'): Datastore.Audit or Datastore.AllocateSpace on the
// storage; the volumes, sorted by volid, that the caller may read
// (check_volume_access), filtered by vmid and content (local-lvm holds
// images and rootdir).
func (e *Emulator) storageContent(r *request) (any, error) {
	storage := r.vars["storage"]
	if err := r.auth.check("/storage/"+storage, true, "Datastore.Audit", "Datastore.AllocateSpace"); err != nil {
		return nil, err
	}
	vmid, vmidSet, perr := r.intParam("vmid")
	if perr != nil {
		return nil, perr
	}
	content, _ := r.param("content")
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.st.checkStorage(r.vars["node"], storage); err != nil {
		return nil, err
	}
	out := []map[string]any{}
	if content != "" && content != "images" {
		return out, nil // no rootdir volumes: there are no containers
	}
	vols := e.st.volumes(r.vars["node"])
	for _, name := range slices.Sorted(maps.Keys(vols)) {
		v := vols[name]
		if (vmidSet && v.owner != vmid) || checkVolumeAccess(r.auth, storage, v.owner) != nil {
			continue
		}
		out = append(out, map[string]any{"volid": storage + ":" + name, "format": "raw", "size": v.size, "vmid": v.owner, "content": "images"})
	}
	return out, nil
}

// volumeInfo is GET /nodes/{node}/storage/{storage}/content/{volume}
// (Content.pm 'info'): the volume's path, size, used (LVM reports 0) and
// format, once check_volume_access allows it. {volume} is a volume ID or,
// with {storage}, a name on it.
func (e *Emulator) volumeInfo(r *request) (any, error) {
	storage, volid := r.vars["storage"], r.vars["volume"]
	// Content.pm's $real_volume_id
	if m := volumeIDPattern.FindStringSubmatch(volid); strings.Contains(volid, ":") {
		if m == nil {
			return nil, paramErr(map[string]string{"volume": fmt.Sprintf("unable to parse volume ID '%s'\n", volid)})
		}
		if storage != "" && m[1] != storage {
			return nil, paramErr(map[string]string{"volume": fmt.Sprintf("storage ID mismatch (%s != %s)\n", m[1], storage)})
		}
		storage = m[1]
	} else {
		volid = storage + ":" + volid
	}
	_, name, _ := strings.Cut(volid, ":")
	e.mu.Lock()
	defer e.mu.Unlock()
	// PVE::Storage::parse_volname: the storage, then LvmThinPlugin's
	if err := e.st.checkStorage(r.vars["node"], storage); err != nil {
		return nil, err
	}
	if !lvmName.MatchString(name) {
		return nil, errf("lvm name '%s' contains illegal characters", name)
	}
	nm := lvmThinVolname.FindStringSubmatch(name)
	if nm == nil {
		return nil, errf("unable to parse lvm volume name '%s'", name)
	}
	owner, _ := strconv.Atoi(nm[3])
	if err := checkVolumeAccess(r.auth, storage, owner); err != nil {
		return nil, err
	}
	path := "/dev/" + lvmThinVG + "/" + name
	v, ok := e.st.volumes(r.vars["node"])[name]
	if !ok {
		// LVMPlugin::volume_size_info: lvs fails, run_command's errmsg
		// with lvs's last stderr line
		return nil, errf("can't get size of '%s':   Failed to find logical volume \"%s/%s\"", path, lvmThinVG, name)
	}
	return map[string]any{"path": path, "size": v.size, "used": 0, "format": "raw"}, nil
}

// checkStorage is the node's check, then the storage's: only local-lvm
// exists. Caller holds e.mu.
func (s *state) checkStorage(node, storage string) *apiError {
	if err := s.checkNode(node); err != nil {
		return err
	}
	if storage != Storage {
		return errf("storage '%s' does not exist", storage)
	}
	return nil
}
