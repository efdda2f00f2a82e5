package proxmox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// CreateVM creates the VM (or clones it from spec.Clone's template),
// configures it (CPU, memory with ballooning off, machine, firmware, disks,
// networks, cloud-init, tags, hostpciN) and starts it when spec.Started,
// following each task through its UPID. A failure after the VM exists
// returns the VM (as far as it could be read) with the error, so the caller
// keeps it.
func (c *Client) CreateVM(ctx context.Context, spec VMSpec) (VM, error) {
	if err := ValidateGPUs(spec.GPUs); err != nil {
		return VM{}, err
	}
	var existing map[string]any
	if spec.Clone != nil {
		if err := c.cloneVM(ctx, &spec); err != nil {
			return VM{}, err
		}
		config, err := c.vmConfig(ctx, spec.Node, spec.VMID)
		if err != nil {
			return c.partial(ctx, spec, fmt.Errorf("reading cloned VM %d on node %s: %w", spec.VMID, spec.Node, err))
		}
		existing = config
	} else {
		upid, err := c.reserveVM(ctx, &spec, func(vmid int) (string, error) {
			return c.post(ctx, "/nodes/"+spec.Node+"/qemu", map[string]any{"vmid": vmid, "name": spec.Name})
		})
		if err == nil {
			err = c.waitTask(ctx, upid)
		}
		if err != nil {
			err = fmt.Errorf("creating VM %d on node %s: %w", spec.VMID, spec.Node, err)
			if _, found, _ := c.ReadVM(ctx, spec.Node, spec.VMID); found {
				return c.partial(ctx, spec, err)
			}
			return VM{}, err
		}
	}
	params := vmParams(spec)
	for k, v := range allocParams(spec, existing) {
		params[k] = v
	}
	if err := c.configure(ctx, spec.Node, spec.VMID, params, nil); err != nil {
		return c.partial(ctx, spec, err)
	}
	if spec.Started {
		if err := c.startVM(ctx, spec.Node, spec.VMID); err != nil {
			return c.partial(ctx, spec, err)
		}
	}
	vm, found, err := c.ReadVM(ctx, spec.Node, spec.VMID)
	if err != nil {
		return c.partial(ctx, spec, err)
	}
	if !found {
		return VM{}, fmt.Errorf("VM %d on node %s is gone right after it was created", spec.VMID, spec.Node)
	}
	return vm, nil
}

// partial returns the VM that exists despite err: read back when possible,
// else the identity alone.
func (c *Client) partial(ctx context.Context, spec VMSpec, err error) (VM, error) {
	if vm, found, readErr := c.ReadVM(ctx, spec.Node, spec.VMID); readErr == nil && found {
		return vm, err
	}
	return VM{VMSpec: VMSpec{Node: spec.Node, VMID: spec.VMID, Name: spec.Name}}, err
}

// cloneVM clones spec.Clone.Source (a template's VMID or name) to
// spec.VMID on spec.Node (a free ID when zero, set in spec) and follows
// the qmclone task.
func (c *Client) cloneVM(ctx context.Context, spec *VMSpec) error {
	srcNode, srcID, err := c.resolveTemplate(ctx, spec.Clone.Source, spec.Node)
	if err != nil {
		return err
	}
	upid, err := c.reserveVM(ctx, spec, func(vmid int) (string, error) {
		params := map[string]any{"newid": vmid, "full": spec.Clone.Full}
		if spec.Name != "" {
			params["name"] = spec.Name
		}
		if srcNode != spec.Node {
			params["target"] = spec.Node
		}
		return c.post(ctx, vmPath(srcNode, srcID)+"/clone", params)
	})
	if err == nil {
		err = c.waitTask(ctx, upid)
	}
	if err != nil {
		return fmt.Errorf("cloning %s (VM %d on node %s) to VM %d on node %s: %w", spec.Clone.Source, srcID, srcNode, spec.VMID, spec.Node, err)
	}
	return nil
}

// resolveTemplate finds the clone source by VMID or by name among the
// cluster's templates (/cluster/resources), preferring one on node.
func (c *Client) resolveTemplate(ctx context.Context, source, node string) (string, int, error) {
	resources, err := c.vmResources(ctx)
	if err != nil {
		return "", 0, err
	}
	id, byID := strconv.Atoi(source)
	var matches []vmResource
	for _, r := range resources {
		if r.Type != "qemu" {
			continue
		}
		if (byID == nil && int(r.VMID) == id) || (byID != nil && r.Template && r.Name == source) {
			matches = append(matches, r)
		}
	}
	if len(matches) == 0 {
		return "", 0, fmt.Errorf("clone.source: no template %q in the cluster: give a template's name or VMID (see /cluster/resources, template=1)", source)
	}
	for _, m := range matches {
		if m.Node == node {
			return m.Node, int(m.VMID), nil
		}
	}
	if len(matches) > 1 {
		var where []string
		for _, m := range matches {
			where = append(where, fmt.Sprintf("%d on %s", int(m.VMID), m.Node))
		}
		return "", 0, fmt.Errorf("clone.source: %q names %d templates (%s) and none on node %s: give the VMID", source, len(matches), strings.Join(where, ", "), node)
	}
	return matches[0].Node, int(matches[0].VMID), nil
}
