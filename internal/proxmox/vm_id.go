package proxmox

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// A VM ID chosen with /cluster/nextid is only a suggestion: PVE reserves
// nothing until a create or clone request writes the VM's config file, and
// two requests with the same suggestion collide ("unable to create VM 100:
// config file already exists", "VM 100 already exists on node ..."). That
// happens within one `terraform apply` (resources are created in parallel)
// and between clients. So a Client holds vmidMu from asking for a free ID
// until the request that takes it has been answered (PVE has then written
// the config), and retries with a fresh ID when another client took it
// meanwhile.

// ErrVMIDsTaken is reserveVM giving up: other clients kept taking the
// free VM IDs PVE suggested; the caller can choose one instead.
var ErrVMIDsTaken = errors.New("every free VM ID Proxmox VE suggested was taken by another client before the request reached it: give the VM an ID of its own")

// maxVMIDAttempts bounds the retries when other clients keep taking the
// suggested ID.
const maxVMIDAttempts = 5

// reserveVM sends the request that creates the VM (a create or a clone,
// built by request for a given ID) and returns its task's UPID. With
// spec.VMID zero it picks a free ID first, and again when the ID was taken
// before the request reached PVE; spec.VMID is set to the ID used.
func (c *Client) reserveVM(ctx context.Context, spec *VMSpec, request func(vmid int) (string, error)) (string, error) {
	if spec.VMID != 0 {
		return request(spec.VMID)
	}
	c.vmidMu.Lock()
	defer c.vmidMu.Unlock()
	var lastErr error
	for range maxVMIDAttempts {
		id, err := c.NextVMID(ctx)
		if err != nil {
			return "", err
		}
		upid, err := request(id)
		if err == nil || !vmidTaken(err) {
			spec.VMID = id
			return upid, err
		}
		lastErr = err
	}
	return "", fmt.Errorf("%w (%d attempts): %w", ErrVMIDsTaken, maxVMIDAttempts, lastErr)
}

// vmidTaken reports whether err is PVE refusing a create or clone because
// the VM ID exists.
func vmidTaken(err error) bool {
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	if strings.Contains(apiErr.Message, "already exists") {
		return true
	}
	msg, _ := apiErr.Errors["vmid"].(string)
	return strings.Contains(msg, "already exists")
}
