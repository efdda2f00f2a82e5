package proxmox

import (
	"fmt"
	"slices"
	"strings"
)

// stopKeys are the config keys Proxmox VE changes only while the VM is
// stopped (on a running VM they stay pending until its next start), with
// the field of a VMSpec each comes from; hostpciN (FieldGPUs) too. The
// rest of what this package sets is applied to a running VM at once.
var stopKeys = map[string]FieldKind{
	"cores": FieldCores, "sockets": FieldSockets, "cpu": FieldCPUType, "memory": FieldMemory, "balloon": FieldMemory,
	"machine": FieldMachine, "bios": FieldBIOS, "efidisk0": FieldEFIDisk,
}

// NeedsStop says whether Proxmox VE changes config key only while the VM
// is stopped.
func NeedsStop(key string) bool {
	_, ok := stopKeys[key]
	return ok || isHostPCIKey(key)
}

// isHostPCIKey says whether key is hostpciN.
func isHostPCIKey(key string) bool {
	n, ok := strings.CutPrefix(key, "hostpci")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// stopFieldOrder is the order StopFields reports fields in: the GPUs
// first, the reason a passthrough VM usually restarts.
var stopFieldOrder = []FieldKind{FieldGPUs, FieldCores, FieldSockets, FieldCPUType, FieldMemory, FieldMachine, FieldBIOS, FieldEFIDisk}

// StopFields lists the fields whose change from prior to planned Proxmox
// VE applies only to a stopped VM, as UpdateVM would write them (so the
// same GPU spelled another way is no change), in stopFieldOrder.
func StopFields(prior, planned VMSpec) []Field {
	before, after := vmParams(prior), vmParams(planned)
	changed := map[FieldKind]bool{}
	for _, params := range []map[string]string{before, after} {
		for k := range params {
			if !NeedsStop(k) {
				continue
			}
			a, inBefore := before[k]
			b, inAfter := after[k]
			if inBefore == inAfter && sameConfigValue(k, a, b) {
				continue
			}
			if kind, ok := stopKeys[k]; ok {
				changed[kind] = true
			} else {
				changed[FieldGPUs] = true
			}
		}
	}
	if (prior.EFIDisk == nil) != (planned.EFIDisk == nil) {
		changed[FieldEFIDisk] = true
	}
	var out []Field
	for _, kind := range stopFieldOrder {
		if changed[kind] {
			out = append(out, Field{Kind: kind})
		}
	}
	return out
}

// RestartNeededError says a change needs the VM stopped and it is running.
type RestartNeededError struct {
	Node    string
	VMID    int
	Changes []string // config keys, e.g. "hostpci0"
}

func (e *RestartNeededError) Error() string {
	keys := slices.Clone(e.Changes)
	slices.Sort(keys)
	return fmt.Sprintf("VM %d on node %s is running, and Proxmox VE changes %s only while it is stopped: nothing was changed; "+
		"stop the VM first, or allow it to be stopped, changed and started again",
		e.VMID, e.Node, strings.Join(keys, ", "))
}
