package proxmox

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// UpdateVM changes the VM from prior to planned in place. Changes that PVE
// applies only to a stopped VM (hostpciN, CPU, memory, machine, firmware)
// on a running VM are made after stopping it: when planned runs, that
// restart needs allowRestart (the VM is stopped, changed and started
// again), without which the answer is a *RestartNeededError and nothing
// is changed; when planned is stopped, the VM is stopped first. New disks are allocated; existing disks are left as
// they are.
func (c *Client) UpdateVM(ctx context.Context, prior, planned VMSpec, allowRestart bool) (VM, error) {
	if err := ValidateGPUs(planned.GPUs); err != nil {
		return VM{}, err
	}
	node, vmid := prior.Node, prior.VMID
	config, err := c.vmConfig(ctx, node, vmid)
	if err != nil {
		return VM{}, fmt.Errorf("reading VM %d on node %s: %w", vmid, node, err)
	}
	status, err := c.vmStatus(ctx, node, vmid)
	if err != nil {
		return VM{}, fmt.Errorf("reading the status of VM %d on node %s: %w", vmid, node, err)
	}
	params, deletions := configChanges(config, vmParams(planned))
	for k, v := range allocParams(planned, config) {
		params[k] = v
	}
	var needStop []string
	for k := range params {
		if NeedsStop(k) {
			needStop = append(needStop, k)
		}
	}
	for _, k := range deletions {
		if NeedsStop(k) {
			needStop = append(needStop, k)
		}
	}
	sort.Strings(needStop)
	running := status == "running"
	if running && len(needStop) > 0 {
		// A VM planned to run again is restarted, which needs
		// allowRestart; one planned stopped is stopped first, as asked.
		if planned.Started && !allowRestart {
			return VM{}, &RestartNeededError{Node: node, VMID: vmid, Changes: needStop}
		}
		if err := c.stopVM(ctx, node, vmid); err != nil {
			return c.partial(ctx, prior, err)
		}
		running = false
	}
	if err := c.configure(ctx, node, vmid, params, deletions); err != nil {
		return c.partial(ctx, prior, err)
	}
	switch {
	case planned.Started && !running:
		if err := c.startVM(ctx, node, vmid); err != nil {
			return c.partial(ctx, prior, err)
		}
	case !planned.Started && running:
		if err := c.stopVM(ctx, node, vmid); err != nil {
			return c.partial(ctx, prior, err)
		}
	}
	vm, found, err := c.ReadVM(ctx, node, vmid)
	if err != nil {
		return VM{}, err
	}
	if !found {
		return VM{}, fmt.Errorf("VM %d on node %s is gone", vmid, node)
	}
	return vm, nil
}

// configChanges compares the current config with the wanted parameters:
// what to set, and which of the keys the provider manages to delete.
func configChanges(current map[string]any, want map[string]string) (map[string]string, []string) {
	set := map[string]string{}
	for k, v := range want {
		if _, ok := current[k]; !ok || !sameConfigValue(k, configString(current[k]), v) {
			set[k] = v
		}
	}
	var del []string
	for k := range current {
		if _, wanted := want[k]; wanted || !managedKey(k) {
			continue
		}
		del = append(del, k)
	}
	sort.Strings(del)
	return set, del
}

// managedKey reports whether the provider owns key (so its absence from the
// plan means delete it).
func managedKey(k string) bool {
	for _, p := range []string{"hostpci", "net", "ipconfig"} {
		if rest, ok := strings.CutPrefix(k, p); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			return true
		}
	}
	switch k {
	case "ciuser", "sshkeys", "cicustom", "tags", "name":
		return true
	}
	return false
}

// sameConfigValue compares a current config value with the one we would
// write, by meaning where PVE rewrites it (a NIC gains its MAC address).
func sameConfigValue(key, current, want string) bool {
	switch {
	case current == want:
		return true
	case key == "sshkeys":
		return sameSSHKeys(current, want)
	case key == "agent":
		return agentEnabled(current) == agentEnabled(want)
	case strings.HasPrefix(key, "net"):
		return parseNet(current) == parseNet(want)
	case strings.HasPrefix(key, "hostpci"):
		a, errA := ParseHostPCI(current)
		b, errB := ParseHostPCI(want)
		return errA == nil && errB == nil && a == b
	}
	return false
}

// sameSSHKeys compares two URL-encoded sshkeys values by their keys (PVE
// may encode differently from us).
func sameSSHKeys(a, b string) bool {
	da, errA := url.PathUnescape(a)
	db, errB := url.PathUnescape(b)
	return errA == nil && errB == nil && strings.TrimSpace(da) == strings.TrimSpace(db)
}
