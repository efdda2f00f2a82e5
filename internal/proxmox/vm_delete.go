package proxmox

import (
	"context"
	"fmt"
	"net/url"

	"github.com/gpuinfra/terraform-provider-gpu/internal/poll"
)

// DeleteVM stops the VM if it runs, then destroys it with purge=1 and
// destroy-unreferenced-disks=1, following each task. A VM whose create or
// clone still runs (its config locked "create" or "clone", as after an
// apply cut short) is destroyed once that is done: PVE's destroy refuses
// a locked VM. A VM that does not exist (or vanishes on the way) counts
// as deleted.
func (c *Client) DeleteVM(ctx context.Context, node string, vmid int) error {
	if err := c.waitCreated(ctx, node, vmid); err != nil {
		if IsNotFound(err) {
			return nil
		}
		return err
	}
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

// waitCreated waits, bounded by ctx, until the VM's config is no longer
// locked by its create or clone (at once when it is not).
func (c *Client) waitCreated(ctx context.Context, node string, vmid int) error {
	creating := func(ctx context.Context) (bool, error) {
		config, err := c.vmConfig(ctx, node, vmid)
		if err != nil {
			if IsNotFound(err) {
				return false, err
			}
			return false, fmt.Errorf("reading the config of VM %d on node %s: %w", vmid, node, err)
		}
		lock := configString(config["lock"])
		return lock == "create" || lock == "clone", nil
	}
	if locked, err := creating(ctx); err != nil || !locked {
		return err
	}
	what := fmt.Sprintf("the create or clone of VM %d on node %s to finish", vmid, node)
	return poll.Until(ctx, taskWaitLog, what, taskSchedule, func(ctx context.Context) (bool, error) {
		locked, err := creating(ctx)
		return !locked, err
	})
}
