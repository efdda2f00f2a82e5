package proxmox

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/poll"
)

// UPID is a PVE task id, "UPID:node:pid:pstart:starttime:type:id:user:".
type UPID struct {
	Raw  string
	Node string
	Type string // "qmcreate", "qmstart", ...
	ID   string // the VMID for qm* tasks
	User string
}

// ParseUPID splits a UPID as PVE formats it (PVE::Tools::upid_encode).
func ParseUPID(s string) (UPID, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 9 || parts[0] != "UPID" || parts[1] == "" || parts[5] == "" {
		return UPID{}, fmt.Errorf("%q is not a Proxmox task id (UPID:node:pid:pstart:starttime:type:id:user:)", s)
	}
	return UPID{Raw: s, Node: parts[1], Type: parts[5], ID: parts[6], User: parts[7]}, nil
}

// taskSchedule is how a task is followed: the first look after 100 ms,
// each next wait ×1.5 up to 2 s. A context without a deadline is bounded
// by taskDefaultBound.
var taskSchedule = poll.Schedule{First: 100 * time.Millisecond, Initial: 100 * time.Millisecond, Factor: 1.5, Max: 2 * time.Second}

const (
	taskDefaultBound = 30 * time.Minute
	taskLogLines     = 20
)

// taskWaitLog is the wording of the wait lines of a task.
var taskWaitLog = poll.Log{Started: "waiting on Proxmox VE", Polled: "polled Proxmox VE", Finished: "waited on Proxmox VE"}

// postTask POSTs params to path and follows the task it starts.
func (c *Client) postTask(ctx context.Context, path string, params map[string]any) error {
	upid, err := c.post(ctx, path, params)
	if err != nil {
		return err
	}
	return c.waitTask(ctx, upid)
}

// waitTask follows upid until it stops; an exit status other than OK (or
// PVE's "WARNINGS: n", a success) is a *TaskError with the log's last lines.
// An empty upid (a synchronous answer) is done.
func (c *Client) waitTask(ctx context.Context, upid string) error {
	if upid == "" {
		return nil
	}
	task, err := ParseUPID(upid)
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, taskDefaultBound)
		defer cancel()
	}
	path := "/nodes/" + url.PathEscape(task.Node) + "/tasks/" + url.PathEscape(upid)
	var failed *TaskError
	err = poll.Until(ctx, taskWaitLog, fmt.Sprintf("Proxmox task %s (%s)", task.Type, upid), taskSchedule, func(ctx context.Context) (bool, error) {
		var status struct {
			Status     string `json:"status"`
			ExitStatus string `json:"exitstatus"`
		}
		if err := c.get(ctx, path+"/status", &status); err != nil {
			if ctx.Err() != nil {
				return false, fmt.Errorf("waiting for Proxmox task %s (%s): %w", task.Type, upid, err)
			}
			return false, fmt.Errorf("reading the status of Proxmox task %s (%s): %w", task.Type, upid, err)
		}
		if status.Status == "running" || status.Status == "" {
			return false, nil
		}
		if status.ExitStatus != "OK" && !strings.HasPrefix(status.ExitStatus, "WARNINGS") {
			failed = &TaskError{UPID: upid, Type: task.Type, ExitStatus: status.ExitStatus}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	if failed != nil {
		failed.Log = c.taskLogTail(ctx, path)
		return failed
	}
	return nil
}

// taskLogTail returns the task log's last lines (nil when unreadable: the
// exit status is the error either way).
func (c *Client) taskLogTail(ctx context.Context, path string) []string {
	var lines []struct {
		N flexInt `json:"n"`
		T string  `json:"t"`
	}
	if err := c.get(ctx, path+"/log?start=0&limit=5000", &lines); err != nil {
		return nil
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, l.T)
	}
	if len(out) > taskLogLines {
		out = out[len(out)-taskLogLines:]
	}
	return out
}
