package proxmox

import (
	"context"
	"fmt"
	"net/url"
)

// DeleteVM stops the VM if it runs, then destroys it with purge=1 and
// destroy-unreferenced-disks=1, following each task. A VM that does not
// exist (or vanishes on the way) counts as deleted.
func (c *Client) DeleteVM(ctx context.Context, node string, vmid int) error {
	status, err := c.vmStatus(ctx, node, vmid)
	if IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the status of VM %d on node %s: %w", vmid, node, err)
	}
	if status == "running" {
		if err := c.stopVM(ctx, node, vmid); err != nil {
			if IsNotFound(err) {
				return nil
			}
			return err
		}
	}
	upid, err := c.delete(ctx, vmPath(node, vmid), url.Values{"purge": {"1"}, "destroy-unreferenced-disks": {"1"}})
	if err == nil {
		err = c.waitTask(ctx, upid)
	}
	if IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("destroying VM %d on node %s: %w", vmid, node, err)
	}
	return nil
}
