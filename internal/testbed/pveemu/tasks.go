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
	held := t.held // ReleaseHeldTasks writes t.held under e.mu
	delete(s.holdNext, typ)
	ctx := e.ctx
	go func() {
		if held {
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

// upidPattern is PVE::UPID::decode's pattern (pve-common): node, pid,
// pstart, starttime, type, id and user (group 8).
var upidPattern = regexp.MustCompile(`^UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s/]+):([^:\s/]*):([^:\s/]+):$`)

// taskUser is pve-manager API2/Tasks.pm's $convert_token_task: a task
// started by a token has its user and, apart, the token's name.
func taskUser(authid string) (user, tokenid string) {
	if tokenIDPattern.MatchString(authid) {
		user, tokenid, _ = strings.Cut(authid, "!")
		return user, tokenid
	}
	return authid, ""
}

// taskVisible is Tasks.pm's $check_task_user: a token sees its own
// tasks, a user its own and its tokens'.
func taskVisible(taskAuthid, authid string) bool {
	user, tokenid := taskUser(taskAuthid)
	if tokenid != "" {
		return authid == taskAuthid || authid == user
	}
	return authid == user
}

// taskFields are a task's fields as upid_decode and $convert_token_task
// give them.
func (t *task) fields() map[string]any {
	user, tokenid := taskUser(t.auth.authid)
	out := map[string]any{"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart, "starttime": t.starttime,
		"type": t.typ, "id": t.id, "user": user}
	if tokenid != "" {
		out["tokenid"] = tokenid
	}
	return out
}

// checkTaskAccess parses {upid} ("unable to parse worker upid") and lets
// the task's own user or token through, anyone else with Sys.Audit on
// the node (Tasks.pm read_task_status, read_task_log).
func checkTaskAccess(r *request) *apiError {
	m := upidPattern.FindStringSubmatch(r.vars["upid"])
	if m == nil {
		return paramErr(map[string]string{"upid": "unable to parse worker upid"})
	}
	if !taskVisible(m[8], r.auth.authid) {
		return r.auth.check("/nodes/"+r.vars["node"], false, "Sys.Audit")
	}
	return nil
}

// findTask is the task {upid} names on {node}: its log file exists only
// on the node that ran it. Caller holds e.mu.
func (e *Emulator) findTask(r *request) (*task, bool) {
	t, ok := e.st.tasks[r.vars["upid"]]
	if !ok || t.node != r.vars["node"] {
		return nil, false
	}
	return t, true
}

// taskStatus is GET /nodes/{node}/tasks/{upid}/status (Tasks.pm
// read_task_status): "no such task" for a UPID without a log file.
func (e *Emulator) taskStatus(r *request) (any, error) {
	if !upidPattern.MatchString(r.vars["upid"]) {
		return nil, paramErr(map[string]string{"upid": "unable to parse worker upid"})
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.findTask(r)
	if !ok {
		return nil, paramErr(map[string]string{"upid": "no such task"})
	}
	if err := checkTaskAccess(r); err != nil {
		return nil, err
	}
	out := t.fields()
	out["status"] = "running"
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

// taskLogLines is GET /nodes/{node}/tasks/{upid}/log (Tasks.pm
// read_task_log): lines {n, t} from start (0-based), at most limit
// (default 50).
func (e *Emulator) taskLogLines(r *request) (any, error) {
	start, limit, perr := r.pageParams()
	if perr != nil {
		return nil, perr
	}
	if err := checkTaskAccess(r); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.findTask(r)
	if !ok {
		// PVE::Tools::dump_logfile
		return logPage{lines: []map[string]any{{"n": 1, "t": "unable to open file - No such file or directory"}}, total: 1}, nil
	}
	lines := t.log
	page := logPage{lines: []map[string]any{}, total: len(lines)}
	for i := start; i < len(lines) && i < start+limit; i++ {
		page.lines = append(page.lines, map[string]any{"n": i + 1, "t": lines[i]})
	}
	return page, nil
}
