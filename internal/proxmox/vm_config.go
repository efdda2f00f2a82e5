package proxmox

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// diskKey matches a disk's config key.
var diskKey = regexp.MustCompile(`^(scsi|virtio|sata|ide)\d+$`)

// netModels are the NIC models PVE writes as "MODEL[=MAC]".
var netModels = []string{"virtio", "e1000", "e1000e", "rtl8139", "vmxnet3"}

// vmParams is the config of spec as PVE parameters (without disks and
// efidisk0, which are allocated once: see allocParams).
func vmParams(spec VMSpec) map[string]string {
	p := map[string]string{"balloon": "0", "agent": "1"}
	if spec.Name != "" {
		p["name"] = spec.Name
	}
	if spec.Cores > 0 {
		p["cores"] = strconv.Itoa(spec.Cores)
	}
	if spec.Sockets > 0 {
		p["sockets"] = strconv.Itoa(spec.Sockets)
	}
	if spec.CPUType != "" {
		p["cpu"] = spec.CPUType
	}
	if spec.MemoryMiB > 0 {
		p["memory"] = strconv.Itoa(spec.MemoryMiB)
	}
	if spec.Machine != "" {
		p["machine"] = spec.Machine
	}
	if spec.BIOS != "" {
		p["bios"] = spec.BIOS
	}
	for i, n := range spec.Networks {
		p["net"+strconv.Itoa(i)] = netValue(n)
	}
	if ci := spec.CloudInit; ci != nil {
		if ci.User != "" {
			p["ciuser"] = ci.User
		}
		if len(ci.SSHKeys) > 0 {
			// PVE takes sshkeys URL-encoded (spaces as %20), and stores it so.
			p["sshkeys"] = strings.ReplaceAll(url.QueryEscape(strings.Join(ci.SSHKeys, "\n")), "+", "%20")
		}
		for i, ip := range ci.IPConfig {
			p["ipconfig"+strconv.Itoa(i)] = ip
		}
		if ci.UserDataFile != "" {
			p["cicustom"] = "user=" + ci.UserDataFile
		}
	}
	if len(spec.Tags) > 0 {
		tags := append([]string(nil), spec.Tags...)
		sort.Strings(tags)
		p["tags"] = strings.Join(tags, ";")
	}
	if spec.OnBoot {
		p["onboot"] = "1"
	} else {
		p["onboot"] = "0"
	}
	for i, g := range spec.GPUs {
		p["hostpci"+strconv.Itoa(i)] = HostPCIValue(g)
	}
	return p
}

// allocParams allocates what spec has and existing (a clone's config, or
// nil) lacks: efidisk0, disks, the cloud-init drive.
func allocParams(spec VMSpec, existing map[string]any) map[string]string {
	p := map[string]string{}
	has := func(k string) bool { _, ok := existing[k]; return ok }
	if spec.EFIDisk != nil && !has("efidisk0") {
		keys := "0"
		if spec.EFIDisk.PreEnrolledKeys {
			keys = "1"
		}
		p["efidisk0"] = spec.EFIDisk.Storage + ":1,efitype=4m,pre-enrolled-keys=" + keys
	}
	for _, d := range spec.Disks {
		if !has(d.Interface) {
			p[d.Interface] = fmt.Sprintf("%s:%d", d.Storage, d.SizeGiB)
		}
	}
	if ci := spec.CloudInit; ci != nil && ci.Storage != "" && cloudInitDrive(existing) == "" {
		p["ide2"] = ci.Storage + ":cloudinit"
	}
	return p
}

func netValue(n Network) string {
	model := n.Model
	if model == "" {
		model = "virtio"
	}
	v := model + ",bridge=" + n.Bridge
	if n.VLAN > 0 {
		v += ",tag=" + strconv.Itoa(n.VLAN)
	}
	if n.Firewall {
		v += ",firewall=1"
	}
	return v
}

// cloudInitDrive is the key of the config's cloud-init drive, or "".
func cloudInitDrive(config map[string]any) string {
	for k, v := range config {
		if diskKey.MatchString(k) && strings.Contains(configString(v), "cloudinit") {
			return k
		}
	}
	return ""
}

// specOf reads a VM config back into a VMSpec (node and vmid given).
func specOf(node string, vmid int, config map[string]any) VMSpec {
	s := func(k string) string { return configString(config[k]) }
	atoi := func(k string, def int) int {
		if n, err := strconv.Atoi(s(k)); err == nil {
			return n
		}
		return def
	}
	spec := VMSpec{
		Node: node, VMID: vmid, Name: s("name"),
		Cores: atoi("cores", 1), Sockets: atoi("sockets", 1), CPUType: s("cpu"), MemoryMiB: atoi("memory", 512),
		Machine: s("machine"), BIOS: s("bios"), OnBoot: s("onboot") == "1",
	}
	if spec.BIOS == "" {
		spec.BIOS = "seabios"
	}
	if v := s("efidisk0"); v != "" {
		o := splitOptions(v, "file")
		storage, _, _ := strings.Cut(o["file"], ":")
		spec.EFIDisk = &EFIDisk{Storage: storage, PreEnrolledKeys: o["pre-enrolled-keys"] == "1"}
	}
	ciDrive := cloudInitDrive(config)
	var diskKeys []string
	for k := range config {
		if diskKey.MatchString(k) && k != ciDrive && !strings.Contains(s(k), "media=cdrom") {
			diskKeys = append(diskKeys, k)
		}
	}
	sort.Strings(diskKeys)
	for _, k := range diskKeys {
		o := splitOptions(s(k), "file")
		storage, _, _ := strings.Cut(o["file"], ":")
		spec.Disks = append(spec.Disks, Disk{Interface: k, Storage: storage, SizeGiB: sizeGiB(o["size"])})
	}
	for i := 0; ; i++ {
		v, ok := config["net"+strconv.Itoa(i)]
		if !ok {
			break
		}
		spec.Networks = append(spec.Networks, parseNet(configString(v)))
	}
	ci := &CloudInit{User: s("ciuser")}
	if ciDrive != "" {
		ci.Storage, _, _ = strings.Cut(splitOptions(s(ciDrive), "file")["file"], ":")
	}
	if keys := s("sshkeys"); keys != "" {
		if decoded, err := url.PathUnescape(keys); err == nil {
			keys = decoded
		}
		for _, k := range strings.Split(strings.TrimSpace(keys), "\n") {
			if k = strings.TrimSpace(k); k != "" {
				ci.SSHKeys = append(ci.SSHKeys, k)
			}
		}
	}
	for i := 0; ; i++ {
		v, ok := config["ipconfig"+strconv.Itoa(i)]
		if !ok {
			break
		}
		ci.IPConfig = append(ci.IPConfig, configString(v))
	}
	ci.UserDataFile = splitOptions(s("cicustom"), "")["user"]
	if ciDrive != "" || ci.User != "" || len(ci.SSHKeys) > 0 || len(ci.IPConfig) > 0 || ci.UserDataFile != "" {
		spec.CloudInit = ci
	}
	spec.Tags = strings.FieldsFunc(s("tags"), func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
	sort.Strings(spec.Tags)
	spec.GPUs = gpusOf(hostPCILines(config))
	return spec
}

func parseNet(v string) Network {
	n := Network{}
	for i, part := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(part, "=")
		switch {
		case i == 0 && isNetModel(k):
			n.Model = k
		case k == "model":
			n.Model = val
		case k == "bridge":
			n.Bridge = val
		case k == "tag":
			n.VLAN, _ = strconv.Atoi(val)
		case k == "firewall":
			n.Firewall = val == "1"
		}
	}
	return n
}

func isNetModel(k string) bool {
	for _, m := range netModels {
		if k == m {
			return true
		}
	}
	return false
}

// sizeGiB reads PVE's "32G", "512M", "1T" (rounded up to whole GiB).
func sizeGiB(size string) int {
	if size == "" {
		return 0
	}
	unit := size[len(size)-1]
	n, err := strconv.ParseFloat(strings.TrimRight(size, "KMGTkmgt"), 64)
	if err != nil {
		return 0
	}
	switch unit {
	case 'T', 't':
		n *= 1024
	case 'M', 'm':
		n /= 1024
	case 'K', 'k':
		n /= 1024 * 1024
	}
	g := int(n)
	if float64(g) < n {
		g++
	}
	return g
}
