package proxmox

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
)

func vmPath(node string, vmid int) string {
	return "/nodes/" + url.PathEscape(node) + "/qemu/" + strconv.Itoa(vmid)
}

// vmConfig is GET .../config; an absent VM is an error IsNotFound accepts.
func (c *Client) vmConfig(ctx context.Context, node string, vmid int) (map[string]any, error) {
	var config map[string]any
	if err := c.get(ctx, vmPath(node, vmid)+"/config", &config); err != nil {
		return nil, err
	}
	return config, nil
}

// vmStatus is "running" or "stopped" (GET .../status/current).
func (c *Client) vmStatus(ctx context.Context, node string, vmid int) (string, error) {
	var status struct {
		Status string `json:"status"`
	}
	if err := c.get(ctx, vmPath(node, vmid)+"/status/current", &status); err != nil {
		return "", err
	}
	return status.Status, nil
}

// ReadVM reads a VM back: its config as a VMSpec, its status, its hostpci
// lines and, when the guest agent answers, its IPv4 addresses. found is
// false when the VM does not exist.
func (c *Client) ReadVM(ctx context.Context, node string, vmid int) (VM, bool, error) {
	config, err := c.vmConfig(ctx, node, vmid)
	if IsNotFound(err) {
		return VM{}, false, nil
	}
	if err != nil {
		return VM{}, false, fmt.Errorf("reading VM %d on node %s: %w", vmid, node, err)
	}
	status, err := c.vmStatus(ctx, node, vmid)
	if IsNotFound(err) {
		return VM{}, false, nil
	}
	if err != nil {
		return VM{}, false, fmt.Errorf("reading the status of VM %d on node %s: %w", vmid, node, err)
	}
	vm := VM{VMSpec: specOf(node, vmid, config), Status: status, HostPCI: hostPCILines(config)}
	vm.Started = status == "running"
	if vm.Started && agentEnabled(configString(config["agent"])) {
		vm.IPv4 = c.guestIPv4(ctx, node, vmid)
	}
	return vm, true, nil
}

func agentEnabled(v string) bool {
	o := splitOptions(v, "enabled")
	return o["enabled"] == "1"
}

// guestIPv4 asks the guest agent for the VM's IPv4 addresses, loopback and
// link-local left out; an agent that does not answer gives nil.
func (c *Client) guestIPv4(ctx context.Context, node string, vmid int) []string {
	var answer struct {
		Result []struct {
			Name      string `json:"name"`
			Addresses []struct {
				Type    string `json:"ip-address-type"`
				Address string `json:"ip-address"`
			} `json:"ip-addresses"`
		} `json:"result"`
	}
	if err := c.get(ctx, vmPath(node, vmid)+"/agent/network-get-interfaces", &answer); err != nil {
		return nil
	}
	var out []string
	for _, iface := range answer.Result {
		for _, a := range iface.Addresses {
			ip := net.ParseIP(a.Address)
			if a.Type != "ipv4" || ip == nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
				continue
			}
			out = append(out, a.Address)
		}
	}
	sort.Strings(out)
	return out
}
