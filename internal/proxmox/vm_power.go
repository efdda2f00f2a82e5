package proxmox

import (
	"context"
	"fmt"
	"strings"
)

// startVM starts the VM and follows the qmstart task.
func (c *Client) startVM(ctx context.Context, node string, vmid int) error {
	if err := c.postTask(ctx, vmPath(node, vmid)+"/status/start", nil); err != nil {
		return fmt.Errorf("starting VM %d on node %s: %w", vmid, node, err)
	}
	return nil
}

// stopVM stops the VM hard (as "qm stop") and follows the qmstop task.
func (c *Client) stopVM(ctx context.Context, node string, vmid int) error {
	if err := c.postTask(ctx, vmPath(node, vmid)+"/status/stop", nil); err != nil {
		return fmt.Errorf("stopping VM %d on node %s: %w", vmid, node, err)
	}
	return nil
}

// configure POSTs params (and deletions) to the VM's config, the
// asynchronous config API, and follows its qmconfig task.
func (c *Client) configure(ctx context.Context, node string, vmid int, params map[string]string, deletions []string) error {
	if len(params) == 0 && len(deletions) == 0 {
		return nil
	}
	body := make(map[string]any, len(params)+1)
	for k, v := range params {
		body[k] = v
	}
	if len(deletions) > 0 {
		body["delete"] = strings.Join(deletions, ",")
	}
	if err := c.postTask(ctx, vmPath(node, vmid)+"/config", body); err != nil {
		return fmt.Errorf("configuring VM %d on node %s: %w", vmid, node, err)
	}
	return nil
}
