package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Options configure Start.
type Options struct {
	// Backends are the simulated systems, started in this order and
	// stopped in reverse (see Backend).
	Backends []Backend
	// Dir holds the state, the CA, the logs and a directory per backend.
	// Empty means a new temporary directory, removed by Stop. A given Dir
	// must not hold a testbed already.
	Dir string
	// Log receives the output of processes and in-process components, each
	// line prefixed with their name. Nil means one log file each under
	// Dir/logs.
	Log io.Writer
	// Detached starts processes that outlive the caller: each in a session
	// of its own, without the parent-death signal that otherwise kills them
	// with the calling process. For `gpu-testbed up`; needs Dir, and Log nil.
	Detached bool
}

// The orchestrator's own files in a testbed directory.
const (
	pkiDirName = "pki"
	caFileName = "ca.crt"
	logDirName = "logs"
)

// Testbed is a running set of backends.
type Testbed struct {
	dir       string
	removeDir bool // Dir was created by Start
	detached  bool
	backends  []Backend
	startedAt time.Time
	ready     bool

	ca        *Authority
	output    processOutput
	ports     map[string]int
	processes []*process
	stops     []func() error // what Stop undoes, in start order

	// While Start runs: abortStart cancels it with a cause; started is
	// closed when it returns.
	abortStart context.CancelCauseFunc
	started    chan struct{}

	stopOnce sync.Once
	stopErr  error
}

// processStopTimeout bounds how long Stop waits for one killed process.
const processStopTimeout = 10 * time.Second

// Start makes the testbed's directory and CA, then starts every backend in
// order and returns when all are ready. ctx bounds the start only. On
// error nothing is left running.
func Start(ctx context.Context, opts Options) (*Testbed, error) {
	if opts.Detached && (opts.Dir == "" || opts.Log != nil) {
		return nil, errors.New("starting a detached testbed: it needs a Dir and file logs (Log nil)")
	}
	if err := checkBackendNames(opts.Backends); err != nil {
		return nil, err
	}
	t := &Testbed{
		detached:  opts.Detached,
		backends:  opts.Backends,
		startedAt: time.Now().UTC(),
		ports:     map[string]int{},
		started:   make(chan struct{}),
	}
	if !opts.Detached {
		register(t)
	}
	if err := t.prepareDir(opts.Dir); err != nil {
		return nil, errors.Join(err, t.Stop())
	}
	if err := t.start(ctx, opts.Log); err != nil {
		return nil, errors.Join(err, t.Stop())
	}
	return t, nil
}

func (t *Testbed) prepareDir(dir string) error {
	if dir == "" {
		created, err := createTempDir()
		if created != "" {
			t.removeDir = true
			t.dir = created
		}
		return err
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolving the testbed directory: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, stateFileName)); err == nil {
		return fmt.Errorf("starting a testbed in %s: it already holds one (stop it and remove the directory)", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the testbed directory: %w", err)
	}
	t.dir = dir
	return nil
}

func (t *Testbed) start(ctx context.Context, log io.Writer) error {
	t.output = processOutput{shared: log, mu: &sync.Mutex{}, logDir: filepath.Join(t.dir, logDirName)}
	if log == nil {
		if err := os.MkdirAll(t.output.logDir, 0o700); err != nil {
			return fmt.Errorf("creating the log directory: %w", err)
		}
	}
	if err := t.writeCA(); err != nil {
		return err
	}
	if err := t.saveState(); err != nil {
		return err
	}

	// Any process that exits while the testbed starts fails the start at
	// once, with the end of its log (see Host.StartProcess).
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t.abortStart = cancel
	defer close(t.started)

	for _, b := range t.backends {
		host, err := t.hostFor(b)
		if err != nil {
			return err
		}
		if err := b.Start(ctx, host); err != nil {
			return fmt.Errorf("starting the %s backend: %w", b.Name(), err)
		}
	}
	t.ready = true
	return t.saveState()
}

// writeCA makes the testbed's CA and writes its certificate (never its
// key) for the programs that read it from a file.
func (t *Testbed) writeCA() error {
	ca, err := NewAuthority("gpu-testbed-ca")
	if err != nil {
		return err
	}
	t.ca = ca
	dir := filepath.Join(t.dir, pkiDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the PKI directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, caFileName), ca.CertPEM(), 0o600); err != nil {
		return fmt.Errorf("writing the CA certificate: %w", err)
	}
	return nil
}

// Dir is the testbed's working directory.
func (t *Testbed) Dir() string { return t.dir }

// Env is what clients need to reach every backend, as environment
// variables (see Backend.Env).
func (t *Testbed) Env() map[string]string {
	env := map[string]string{}
	for _, b := range t.backends {
		maps.Copy(env, b.Env())
	}
	return env
}

// Stop stops everything the backends started, in reverse order (killing
// each process group and waiting for it to exit), and removes the
// directory if Start created it. It is safe to call more than once.
func (t *Testbed) Stop() error {
	t.stopOnce.Do(func() {
		defer unregister(t)
		var errs []error
		for i := len(t.stops) - 1; i >= 0; i-- {
			errs = append(errs, t.stops[i]())
		}
		if t.removeDir && t.dir != "" {
			if err := os.RemoveAll(t.dir); err != nil {
				errs = append(errs, fmt.Errorf("removing the testbed directory: %w", err))
			}
		}
		t.stopErr = errors.Join(errs...)
	})
	return t.stopErr
}
