package pveemu

import (
	"crypto/sha1" //nolint:gosec // PVE's config digest is SHA-1
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// state is everything the emulator knows; Emulator.mu guards it.
type state struct {
	dir      string
	nodes    []hostNode
	mappings []mapping
	vms      map[int]*vm
	tasks    map[string]*task
	// tickets are the tickets /access/ticket issued, by ticket; csrf the
	// CSRF prevention tokens, by token, with their user.
	tickets map[string]string
	csrf    map[string]string
	// failNext holds the failures FailNextTask asked for, by task type.
	failNext map[string]taskFailure
	// holdNext are the task types HoldNextTask asked to hold; release is
	// closed (and replaced) by ReleaseHeldTasks.
	holdNext map[string]bool
	release  chan struct{}
	calls    map[string]int
	// pidSeq numbers tasks' and QEMU processes' PIDs.
	pidSeq int
	bootAt time.Time
}

type taskFailure struct {
	exitStatus string
	log        []string
}

// vm is one guest: its config as PVE's config file holds it (raw
// strings), pending changes of a running VM, and its run state.
type vm struct {
	node   string
	vmid   int
	conf   map[string]string
	pend   map[string]string
	pdel   map[string]bool
	status string // "running" | "stopped"
	pid    int
	start  time.Time
	// devices are what a running VM got per hostpci index (rules.go
	// startChecks): what its QEMU monitor reports.
	devices map[int]*vmDevice
}

func newState() *state {
	s := &state{
		nodes: hostProfiles(), mappings: pciMappings(),
		vms: map[int]*vm{}, tasks: map[string]*task{},
		tickets: map[string]string{}, csrf: map[string]string{},
		failNext: map[string]taskFailure{}, calls: map[string]int{},
		holdNext: map[string]bool{}, release: make(chan struct{}),
		pidSeq: 4000, bootAt: time.Now(),
	}
	for _, node := range []string{NodeA6000, NodeH100, NodeL40S, NodeL40SB} {
		id := Templates[node]
		s.vms[id] = &vm{node: node, vmid: id, status: "stopped", conf: map[string]string{
			"name":     TemplateName,
			"template": "1",
			"cores":    "2",
			"sockets":  "1",
			"cpu":      "host",
			"memory":   "2048",
			"machine":  "q35",
			"bios":     "ovmf",
			"efidisk0": Storage + ":base-" + strconv.Itoa(id) + "-disk-0,efitype=4m,pre-enrolled-keys=1,size=4M",
			"scsihw":   "virtio-scsi-single",
			"scsi0":    Storage + ":base-" + strconv.Itoa(id) + "-disk-1,discard=on,iothread=1,size=3584M",
			"ide2":     Storage + ":vm-" + strconv.Itoa(id) + "-cloudinit,media=cdrom",
			"net0":     "virtio=BC:24:11:00:" + macPart(id) + "," + "bridge=" + Bridge,
			"boot":     "order=scsi0",
			"agent":    "1",
			"ostype":   "l26",
			"serial0":  "socket",
			"vga":      "serial0",
			"smbios1":  "uuid=" + uuidFor(id, 1),
			"vmgenid":  uuidFor(id, 2),
		}}
	}
	return s
}

func (s *state) node(name string) *hostNode {
	for i := range s.nodes {
		if s.nodes[i].Name == name {
			return &s.nodes[i]
		}
	}
	return nil
}

func (s *state) mapping(id string) *mapping {
	for i := range s.mappings {
		if s.mappings[i].ID == id {
			return &s.mappings[i]
		}
	}
	return nil
}

func (s *state) nextPID() int {
	s.pidSeq += 7
	return s.pidSeq
}

// digest is the SHA-1 of the VM's config file, as PVE computes it over
// the file's text: the current section, then [PENDING].
func (v *vm) digest() string {
	var text strings.Builder
	for _, k := range slices.Sorted(maps.Keys(v.conf)) {
		text.WriteString(k + ": " + v.conf[k] + "\n")
	}
	if len(v.pend) > 0 || len(v.pdel) > 0 {
		text.WriteString("\n[PENDING]\n")
		if len(v.pdel) > 0 {
			text.WriteString("delete: " + strings.Join(slices.Sorted(maps.Keys(v.pdel)), ",") + "\n")
		}
		for _, k := range slices.Sorted(maps.Keys(v.pend)) {
			text.WriteString(k + ": " + v.pend[k] + "\n")
		}
	}
	sum := sha1.Sum([]byte(text.String())) //nolint:gosec // PVE's config digest is SHA-1
	return hex.EncodeToString(sum[:])
}

// applyPending moves pending changes into the config, as PVE does when a
// VM starts or a stopped VM's config is written.
func (v *vm) applyPending() {
	for k := range v.pdel {
		delete(v.conf, k)
	}
	maps.Copy(v.conf, v.pend)
	v.pend, v.pdel = nil, nil
}

func (v *vm) isTemplate() bool { return v.conf["template"] == "1" }

func macPart(id int) string {
	h := strings.ToUpper(hex.EncodeToString([]byte{byte(id >> 8), byte(id)}))
	return h[:2] + ":" + h[2:]
}
