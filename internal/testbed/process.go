package testbed

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// process is one running program of a backend, in a process group of its
// own so that Stop can kill it with everything it may have started.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string // "" when the output goes to Options.Log

	exited  chan struct{} // closed once the process has been reaped
	waitErr error         // valid after exited is closed
}

// processOutput is where a process's stdout and stderr go: a shared writer
// (each line prefixed with the process name) or a log file per process.
type processOutput struct {
	shared io.Writer
	mu     *sync.Mutex // serializes writes to shared
	logDir string
}

// open returns where name's output goes: the shared writer, each line
// prefixed with the name, or logs/<name>.log (then path is its path).
func (o processOutput) open(name string) (w io.Writer, path string, closeFn func(), err error) {
	if o.shared != nil {
		return &linePrefixWriter{prefix: []byte(name + ": "), out: o.shared, mu: o.mu}, "", func() {}, nil
	}
	path = filepath.Join(o.logDir, name+".log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, "", nil, fmt.Errorf("opening the log of %s: %w", name, err)
	}
	return f, path, func() { f.Close() }, nil
}

// startProcess starts a binary. Attached processes get SIGKILL when the
// thread that started them exits (Pdeathsig), which in Go means when the
// test process exits, since the runtime only ends threads locked by
// LockOSThread: a test that panics or is killed leaves no process behind.
// Detached ones start a session of their own and outlive the caller.
func startProcess(name, path string, args []string, out processOutput, detached bool) (*process, error) {
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	log, logPath, closeLog, err := out.open(name)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	err = cmd.Start()
	closeLog() // the child has its own descriptor
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// pid is the process id, which is also its process group id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// kill sends SIGKILL to the process group and waits until the process is
// reaped, or gives up after timeout.
func (p *process) kill(timeout time.Duration) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := syscall.Kill(-p.pid(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s (pid %d): %w", p.name, p.pid(), err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("waiting for %s (pid %d) to exit: still running after %s", p.name, p.pid(), timeout)
	}
}

// exitError describes an unexpected exit, with the end of its log.
func (p *process) exitError() error {
	msg := fmt.Sprintf("%s exited: %v", p.name, p.waitErr)
	if p.logPath == "" {
		return errors.New(msg)
	}
	return fmt.Errorf("%s; last lines of %s:\n%s", msg, p.logPath, logTail(p.logPath, 20))
}

// logTail returns the last lines of a log file.
func logTail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(reading the log: %v)", err)
	}
	data = bytes.TrimRight(data, "\n")
	for i, n := len(data)-1, 0; i >= 0; i-- {
		if data[i] == '\n' {
			n++
			if n == lines {
				return string(data[i+1:])
			}
		}
	}
	return string(data)
}

// linePrefixWriter writes whole lines, each prefixed, to a writer that other
// processes share.
type linePrefixWriter struct {
	prefix  []byte
	out     io.Writer
	mu      *sync.Mutex
	pending []byte
}

func (w *linePrefixWriter) Write(data []byte) (int, error) {
	w.pending = append(w.pending, data...)
	for {
		i := bytes.IndexByte(w.pending, '\n')
		if i < 0 {
			return len(data), nil
		}
		w.mu.Lock()
		_, err := w.out.Write(append(append([]byte{}, w.prefix...), w.pending[:i+1]...))
		w.mu.Unlock()
		w.pending = w.pending[i+1:]
		if err != nil {
			return len(data), err
		}
	}
}
