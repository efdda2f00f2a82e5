package pveemu

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// task is one worker task (PVE's fork_worker): it runs for
// Options.TaskDuration (after ReleaseHeldTasks when held), then does its
// work and ends.
type task struct {
	upid      string
	node      string
	typ, id   string
	auth      identity
	pid       int
	pstart    int
	starttime int64
	log       []string
	warnings  int
	done      bool
	exit      string // "OK", "WARNINGS: n" or the error
	held      bool   // HoldNextTask held it and it is not released yet
}

// taskLog is what a task's work writes to: lines, and warnings as PVE's
// log_warn writes them ("WARN: ...").
type taskLog struct{ t *task }

func (l taskLog) printf(format string, args ...any) {
	l.t.log = append(l.t.log, fmt.Sprintf(format, args...))
}

func (l taskLog) warn(format string, args ...any) {
	l.t.log = append(l.t.log, "WARN: "+fmt.Sprintf(format, args...))
	l.t.warnings++
}

// taskWork is a task's work, run under Emulator.mu when its time is up;
// undo (may be nil) reverts what the request did when the task fails.
type taskWork struct {
	run  func(l taskLog) error
	undo func()
}

// startTask registers a task and runs it in the background: the UPID it
// returns is what the API call answers. Caller holds e.mu.
func (e *Emulator) startTask(node, typ, id string, auth identity, work taskWork) string {
	s := e.st
	now := time.Now()
	t := &task{node: node, typ: typ, id: id, auth: auth, pid: s.nextPID(), pstart: int(time.Since(s.bootAt)/(10*time.Millisecond)) + 1000, starttime: now.Unix()}
	t.upid = fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", node, t.pid, t.pstart, t.starttime, typ, id, auth.authid)
	s.tasks[t.upid] = t
	failure, fail := s.failNext[typ]
	delete(s.failNext, typ)
	release := s.release
	t.held = s.holdNext[typ]
	delete(s.holdNext, typ)
	ctx := e.ctx
	go func() {
		if t.held {
			select {
			case <-ctx.Done():
				return
			case <-release:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(e.opts.TaskDuration):
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		l := taskLog{t}
		var err error
		if fail {
			t.log = append(t.log, failure.log...)
			err = fmt.Errorf("%s", failure.exitStatus)
		} else {
			err = work.run(l)
		}
		switch {
		case err != nil:
			// RESTEnvironment's fork_worker: chomp, newlines to spaces
			msg := strings.ReplaceAll(strings.TrimRight(err.Error(), "\n"), "\n", " ")
			t.log = append(t.log, "TASK ERROR: "+msg)
			t.exit = msg
			if work.undo != nil {
				work.undo()
			}
		case t.warnings > 0:
			t.exit = fmt.Sprintf("WARNINGS: %d", t.warnings)
			t.log = append(t.log, "TASK "+t.exit)
		default:
			t.exit = "OK"
			t.log = append(t.log, "TASK OK")
		}
		t.done = true
	}()
	return t.upid
}

var upidPattern = regexp.MustCompile(`^UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s]+):([^:\s]*):([^:\s]+):$`)

// findTask resolves {upid}, with PVE's errors for a malformed or unknown one.
func (e *Emulator) findTask(r *request) (*task, *apiError) {
	upid := r.vars["upid"]
	if !upidPattern.MatchString(upid) {
		return nil, paramErr(map[string]string{"upid": "value does not match the regex pattern"})
	}
	t, ok := e.st.tasks[upid]
	if !ok || t.node != r.vars["node"] {
		return nil, errf("can't open file - No such file or directory")
	}
	if r.auth.user != RootUser && t.auth.authid != r.auth.authid {
		if err := r.auth.check("/nodes/"+t.node, false, "Sys.Audit"); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// taskStatus is GET /nodes/{node}/tasks/{upid}/status.
func (e *Emulator) taskStatus(r *request) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.findTask(r)
	if err != nil {
		return nil, err
	}
	out := map[string]any{
		"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart, "starttime": t.starttime,
		"type": t.typ, "id": t.id, "user": t.auth.authid, "status": "running",
	}
	if t.done {
		out["status"] = "stopped"
		out["exitstatus"] = t.exit
	}
	return out, nil
}

// logPage is a list answer with PVE's "total" beside "data".
type logPage struct {
	lines []map[string]any
	total int
}

// taskLogLines is GET /nodes/{node}/tasks/{upid}/log: lines {n, t} from
// start (0-based), at most limit (default 50).
func (e *Emulator) taskLogLines(r *request) (any, error) {
	start, limit, perr := r.pageParams()
	if perr != nil {
		return nil, perr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.findTask(r)
	if err != nil {
		return nil, err
	}
	lines := t.log
	page := logPage{lines: []map[string]any{}, total: len(lines)}
	for i := start; i < len(lines) && i < start+limit; i++ {
		page.lines = append(page.lines, map[string]any{"n": i + 1, "t": lines[i]})
	}
	return page, nil
}
