package proxmox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// CreateVM creates the VM (or clones it from spec.Clone's template),
// configures it (CPU, memory with ballooning off, machine, firmware, disks,
// networks, cloud-init, tags, hostpciN) and starts it when spec.Started,
// following each task through its UPID.
//
// A non-zero VM with an error is a VM that exists (or may: its identity
// at least) although the create did not finish, for the caller to keep:
// a create or clone request that PVE answered and whose task was then cut
// short (the context ended: Ctrl-C, a timeout) or failed without PVE
// removing the VM, a later step that failed, and a request PVE carried out
// while its answer was lost (read back to tell). A zero VM with an error
// means nothing was created: the request was refused, or never sent.
func (c *Client) CreateVM(ctx context.Context, spec VMSpec) (VM, error) {
	if err := ValidateGPUs(spec.GPUs); err != nil {
		return VM{}, err
	}
	var existing map[string]any
	if spec.Clone != nil {
		if err := c.cloneVM(ctx, &spec); err != nil {
			return c.unfinished(ctx, spec, err)
		}
		config, err := c.vmConfig(ctx, spec.Node, spec.VMID)
		if err != nil {
			return c.partial(ctx, spec, fmt.Errorf("reading cloned VM %d on node %s: %w", spec.VMID, spec.Node, err))
		}
		existing = config
	} else if err := c.createBareVM(ctx, &spec); err != nil {
		return c.unfinished(ctx, spec, err)
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

// createRequestError is the failure of the request that creates or clones
// a VM: sent says whether it left this client (with spec.VMID set).
type createRequestError struct {
	sent bool
	err  error
}

func (e *createRequestError) Error() string { return e.err.Error() }
func (e *createRequestError) Unwrap() error { return e.err }

// requestVM sends the request that creates or clones the VM (built by
// request for a VM ID, chosen by reserveVM) and follows its task. The
// request's own failure is a *createRequestError.
func (c *Client) requestVM(ctx context.Context, spec *VMSpec, request func(vmid int) (string, error)) error {
	sent := false
	upid, err := c.reserveVM(ctx, spec, func(vmid int) (string, error) {
		sent = true
		return request(vmid)
	})
	if err != nil {
		return &createRequestError{sent: sent, err: err}
	}
	return c.waitTask(ctx, upid)
}

// unfinished returns what a create or clone that failed (err) left. A
// request never sent, or answered with PVE's refusal, left nothing. A
// request whose answer was lost (the connection broke, the context ended,
// or a proxy in front of PVE answered 502 or 504 for it) may have created
// the VM: it is read back,
// and kept when it is there with spec's name or still locked by its
// create or clone (another client's VM at that ID is not ours). A request
// that PVE answered created the VM: it is kept unless its task failed and
// PVE removed it, as PVE does for a failed create or clone.
func (c *Client) unfinished(ctx context.Context, spec VMSpec, err error) (VM, error) {
	var request *createRequestError
	if errors.As(err, &request) {
		var answer *APIError
		refused := errors.As(err, &answer) && answer.Status != "502" && answer.Status != "504"
		if !request.sent || spec.VMID == 0 || refused {
			return VM{}, err
		}
		readCtx, cancel := readBackContext(ctx)
		defer cancel()
		config, readErr := c.vmConfig(readCtx, spec.Node, spec.VMID)
		switch {
		case IsNotFound(readErr):
			return VM{}, err
		case readErr != nil:
			return identity(spec), fmt.Errorf("%w (VM %d may exist: %v)", err, spec.VMID, readErr)
		}
		name, lock := configString(config["name"]), configString(config["lock"])
		if name != spec.Name && spec.Name != "" && lock != "create" && lock != "clone" {
			return VM{}, err
		}
		return c.partial(ctx, spec, err)
	}
	if spec.VMID == 0 {
		return VM{}, err
	}
	var failed *TaskError
	if errors.As(err, &failed) {
		readCtx, cancel := readBackContext(ctx)
		defer cancel()
		if _, found, readErr := c.ReadVM(readCtx, spec.Node, spec.VMID); readErr == nil && !found {
			return VM{}, err
		}
	}
	return c.partial(ctx, spec, err)
}

// readBackTimeout bounds the reads that tell what a failed create left:
// they run after the caller's context ended too.
const readBackTimeout = 15 * time.Second

// readBackContext is ctx without its end (a read back after Ctrl-C or a
// timeout still runs), bounded by readBackTimeout.
func readBackContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), readBackTimeout)
}

// partial returns the VM that exists despite err: read back (with a
// context of its own, so after the caller's ended too) when possible,
// else its identity alone; a VM that is gone is zero.
func (c *Client) partial(ctx context.Context, spec VMSpec, err error) (VM, error) {
	readCtx, cancel := readBackContext(ctx)
	defer cancel()
	vm, found, readErr := c.ReadVM(readCtx, spec.Node, spec.VMID)
	switch {
	case readErr != nil:
		return identity(spec), err
	case !found:
		return VM{}, err
	}
	if vm.Name == "" {
		vm.Name = spec.Name // a clone still running has no name yet
	}
	return vm, err
}

// identity is the VM spec names, known to exist (or to possibly exist)
// though not read back.
func identity(spec VMSpec) VM {
	return VM{VMSpec: VMSpec{Node: spec.Node, VMID: spec.VMID, Name: spec.Name}}
}

// createBareVM creates an empty VM (POST /nodes/{node}/qemu with its ID
// and name; a free ID when spec.VMID is zero, set in spec) and follows
// the qmcreate task.
func (c *Client) createBareVM(ctx context.Context, spec *VMSpec) error {
	err := c.requestVM(ctx, spec, func(vmid int) (string, error) {
		return c.post(ctx, "/nodes/"+url.PathEscape(spec.Node)+"/qemu", map[string]any{"vmid": vmid, "name": spec.Name})
	})
	if err != nil {
		return fmt.Errorf("creating VM %d on node %s: %w", spec.VMID, spec.Node, err)
	}
	return nil
}

// cloneVM clones spec.Clone.Source (a template's VMID or name) to
// spec.VMID on spec.Node (a free ID when zero, set in spec) and follows
// the qmclone task.
func (c *Client) cloneVM(ctx context.Context, spec *VMSpec) error {
	srcNode, srcID, err := c.resolveTemplate(ctx, spec.Clone.Source, spec.Node)
	if err != nil {
		return &createRequestError{err: err}
	}
	err = c.requestVM(ctx, spec, func(vmid int) (string, error) {
		params := map[string]any{"newid": vmid, "full": spec.Clone.Full}
		if spec.Name != "" {
			params["name"] = spec.Name
		}
		if srcNode != spec.Node {
			params["target"] = spec.Node
		}
		return c.post(ctx, vmPath(srcNode, srcID)+"/clone", params)
	})
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
		return "", 0, &CloneSourceError{Source: source, Problem: "no template of that name or VMID in the cluster: give a template's name or VMID (see /cluster/resources, template=1)"}
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
		return "", 0, &CloneSourceError{Source: source, Problem: fmt.Sprintf("names %d templates (%s) and none on node %s: give the VMID", len(matches), strings.Join(where, ", "), node)}
	}
	return matches[0].Node, int(matches[0].VMID), nil
}

// CloneSourceError is a clone source that names no template, or several
// and none on the VM's node. The caller ties it to its own setting.
type CloneSourceError struct {
	Source  string
	Problem string
}

func (e *CloneSourceError) Error() string {
	return fmt.Sprintf("clone source %q: %s", e.Source, e.Problem)
}
