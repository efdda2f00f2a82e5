package proxmox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
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

// Task polling: the first look after taskPollStart, each next wait ×1.5 up
// to taskPollMax; a context without a deadline is bounded by
// taskDefaultBound.
const (
	taskPollStart    = 100 * time.Millisecond
	taskPollGrowth   = 1.5
	taskPollMax      = 2 * time.Second
	taskDefaultBound = 30 * time.Minute
	taskLogLines     = 20
)

// nextTaskPoll is the wait after prev.
func nextTaskPoll(prev time.Duration) time.Duration {
	if prev <= 0 {
		return taskPollStart
	}
	next := time.Duration(float64(prev) * taskPollGrowth)
	if next > taskPollMax {
		next = taskPollMax
	}
	return next
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
	var wait time.Duration
	for {
		wait = nextTaskPoll(wait)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("waiting for Proxmox task %s (%s): %w", task.Type, upid, ctx.Err())
		case <-timer.C:
		}
		var status struct {
			Status     string `json:"status"`
			ExitStatus string `json:"exitstatus"`
		}
		if err := c.get(ctx, path+"/status", &status); err != nil {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return fmt.Errorf("waiting for Proxmox task %s (%s): %w", task.Type, upid, err)
			}
			return fmt.Errorf("reading the status of Proxmox task %s (%s): %w", task.Type, upid, err)
		}
		if status.Status == "running" || status.Status == "" {
			continue
		}
		if status.ExitStatus == "OK" || strings.HasPrefix(status.ExitStatus, "WARNINGS") {
			return nil
		}
		return &TaskError{UPID: upid, Type: task.Type, ExitStatus: status.ExitStatus, Log: c.taskLogTail(ctx, path)}
	}
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
