package testbed

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// State records a testbed in its directory, so that a later command can
// tell whether it is still running, point clients at it, and stop it. The
// testbed rewrites it as it starts (each process as soon as it runs, so a
// start cut short can still be stopped) and once more when it is Ready.
type State struct {
	Dir       string            `json:"dir"`
	Backends  []string          `json:"backends"`        // by name, each with a directory of its own under Dir
	Ready     bool              `json:"ready"`           // every backend started
	Env       map[string]string `json:"env,omitempty"`   // every backend's Env, once Ready
	Ports     map[string]int    `json:"ports,omitempty"` // <backend>/<name> -> loopback port
	Processes []ProcessRecord   `json:"processes"`
	StartedAt time.Time         `json:"startedAt"`
}

// ProcessRecord identifies one testbed process. StartTime (clock ticks
// after boot, from /proc/<pid>/stat) tells it apart from a later process
// that reuses its pid.
type ProcessRecord struct {
	Name      string `json:"name"`
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
}

const stateFileName = "state.json"

// State describes the testbed.
func (t *Testbed) State() State {
	s := State{
		Dir:       t.dir,
		Ready:     t.ready,
		Ports:     maps.Clone(t.ports),
		StartedAt: t.startedAt,
	}
	for _, b := range t.backends {
		s.Backends = append(s.Backends, b.Name())
	}
	if t.ready {
		s.Env = t.Env()
	}
	for _, p := range t.processes {
		startTime, _ := processStartTime(p.pid())
		s.Processes = append(s.Processes, ProcessRecord{Name: p.name, PID: p.pid(), StartTime: startTime})
	}
	return s
}

func (t *Testbed) saveState() error { return writeState(t.State()) }

// writeState records s in its directory, atomically.
func writeState(s State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the testbed state: %w", err)
	}
	path := filepath.Join(s.Dir, stateFileName)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing the testbed state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing the testbed state: %w", err)
	}
	return nil
}

// ReadState reads the state recorded in dir; found is false when there is none.
func ReadState(dir string) (s State, found bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFileName))
	if errors.Is(err, os.ErrNotExist) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, fmt.Errorf("reading the testbed state: %w", err)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return State{}, false, fmt.Errorf("parsing the testbed state %s: %w", filepath.Join(dir, stateFileName), err)
	}
	return s, true, nil
}

// Running returns the recorded processes that are still alive.
func (s State) Running() []ProcessRecord {
	var alive []ProcessRecord
	for _, p := range s.Processes {
		if p.alive() {
			alive = append(alive, p)
		}
	}
	return alive
}

// Stop kills the process group of every recorded process still alive and
// waits until they are gone, for at most timeout.
func (s State) Stop(timeout time.Duration) error {
	var errs []error
	for _, p := range s.Running() {
		if err := syscall.Kill(-p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("killing %s (pid %d): %w", p.Name, p.PID, err))
		}
	}
	deadline := time.Now().Add(timeout)
	for wait := 10 * time.Millisecond; ; wait = min(wait*2, 200*time.Millisecond) {
		running := s.Running()
		if len(running) == 0 {
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("waiting for %s (pid %d) to exit: still running after %s", running[0].Name, running[0].PID, timeout))
			break
		}
		time.Sleep(wait)
	}
	return errors.Join(errs...)
}

// RemoveFiles deletes what a testbed wrote into dir (the state, the CA,
// the logs and each recorded backend's directory), then dir itself if that
// left it empty. Files it does not know are left alone.
func RemoveFiles(dir string) error {
	s, _, err := ReadState(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range append([]string{pkiDirName, logDirName}, s.Backends...) {
		if !backendName.MatchString(name) {
			continue // not a directory a testbed made
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			errs = append(errs, err)
		}
	}
	// The state last: without it, the backends' directories are unknown.
	if err := os.Remove(filepath.Join(dir, stateFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
		return err
	}
	return nil
}

// alive: the pid exists, is not a zombie, and started when recorded.
func (p ProcessRecord) alive() bool {
	startTime, state, err := readProcStat(p.PID)
	if err != nil || state == "Z" || state == "X" {
		return false
	}
	return p.StartTime == 0 || startTime == p.StartTime
}

func processStartTime(pid int) (uint64, error) {
	startTime, _, err := readProcStat(pid)
	return startTime, err
}

// readProcStat returns the start time and state of a process from
// /proc/<pid>/stat. The command name (field 2) may contain spaces and
// parentheses, so fields are counted from its closing parenthesis.
func readProcStat(pid int) (startTime uint64, state string, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", err
	}
	text := string(data)
	end := strings.LastIndexByte(text, ')')
	if end < 0 {
		return 0, "", fmt.Errorf("parsing /proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(text[end+1:]) // fields[0] is field 3 (state)
	const startTimeField = 22
	if len(fields) < startTimeField-2 {
		return 0, "", fmt.Errorf("parsing /proc/%d/stat: too few fields", pid)
	}
	startTime, err = strconv.ParseUint(fields[startTimeField-3], 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("parsing /proc/%d/stat: %w", pid, err)
	}
	return startTime, fields[0], nil
}
