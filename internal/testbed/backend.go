package testbed

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
)

// Backend is one simulated system of the testbed (see the package comment).
type Backend interface {
	// Name names the backend's directory, its ports in the state and its
	// errors: lowercase letters, digits and dashes ("kubernetes").
	Name() string
	// Start brings the backend up through host and returns when it is
	// ready for clients. ctx bounds the start only; it is canceled, with
	// the cause, when a process the backend started exits meanwhile.
	Start(ctx context.Context, host *Host) error
	// Env is what a client needs to reach the started backend, as
	// environment variables.
	Env() map[string]string
}

var backendName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// reservedNames are the orchestrator's own files in a testbed directory.
var reservedNames = map[string]bool{stateFileName: true, pkiDirName: true, logDirName: true, ownerFileName: true}

func checkBackendNames(backends []Backend) error {
	if len(backends) == 0 {
		return fmt.Errorf("starting a testbed: no backends")
	}
	seen := map[string]bool{}
	for _, b := range backends {
		name := b.Name()
		if !backendName.MatchString(name) || reservedNames[name] {
			return fmt.Errorf("starting a testbed: invalid backend name %q", name)
		}
		if seen[name] {
			return fmt.Errorf("starting a testbed: two backends named %q", name)
		}
		seen[name] = true
	}
	return nil
}

// Host is what the orchestrator lends one backend while it starts. Its
// methods are for Backend.Start, from the goroutine that runs it.
type Host struct {
	t       *Testbed
	backend string
	dir     string
}

// Dir is the backend's own directory, <testbed dir>/<name>; it exists.
func (h *Host) Dir() string { return h.dir }

// CA is the testbed's certificate authority: issue the backend's serving
// and client certificates from it, and clients will trust them.
func (h *Host) CA() *Authority { return h.t.ca }

// CAFile is the CA's certificate (PEM), for programs that read it from a file.
func (h *Host) CAFile() string { return filepath.Join(h.t.dir, pkiDirName, caFileName) }

// Detached reports whether the testbed outlives the process that starts it
// (Options.Detached): a backend then runs its components as processes,
// since Go refuses.
func (h *Host) Detached() bool { return h.t.detached }

// FreePorts returns a free loopback TCP port per name, all distinct, and
// records them in the state as <backend>/<name>.
func (h *Host) FreePorts(names ...string) ([]int, error) {
	ports, err := freeLoopbackPorts(len(names))
	if err != nil {
		return nil, err
	}
	for i, name := range names {
		h.t.ports[h.backend+"/"+name] = ports[i]
	}
	return ports, nil
}

// StartProcess runs a program until the testbed stops. name (unique in the
// testbed) names its log, logs/<name>.log, or prefixes its lines in
// Options.Log. If it exits before the testbed is up, the start fails.
func (h *Host) StartProcess(name, path string, args ...string) error {
	t := h.t
	p, err := startProcess(name, path, args, t.output, t.detached)
	if err != nil {
		return err
	}
	t.processes = append(t.processes, p)
	t.stops = append(t.stops, func() error { return p.kill(processStopTimeout) })
	go func() {
		select {
		case <-p.exited:
			t.abortStart(p.exitError())
		case <-t.started:
		}
	}()
	return t.saveState()
}

// Go runs an in-process component until the testbed stops: run gets a
// context that ends then, and a log like a process's. An error it returns
// before then is written to that log. A detached testbed refuses, since
// the component would die with the process that started it.
func (h *Host) Go(name string, run func(ctx context.Context, log io.Writer) error) error {
	t := h.t
	if t.detached {
		return fmt.Errorf("starting %s: a detached testbed runs processes only", name)
	}
	log, _, closeLog, err := t.output.open(name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer closeLog()
		if err := run(ctx, log); err != nil && ctx.Err() == nil {
			fmt.Fprintf(log, "%s stopped: %v\n", name, err)
		}
	}()
	t.stops = append(t.stops, func() error {
		cancel()
		<-done
		return nil
	})
	return nil
}

// hostFor creates the backend's directory and its Host.
func (t *Testbed) hostFor(b Backend) (*Host, error) {
	dir := filepath.Join(t.dir, b.Name())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the %s directory: %w", b.Name(), err)
	}
	return &Host{t: t, backend: b.Name(), dir: dir}, nil
}
