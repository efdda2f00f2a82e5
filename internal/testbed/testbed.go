package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options configure Start.
type Options struct {
	// BinaryPaths are the programs to run; the zero value means Binaries().
	BinaryPaths BinaryPaths
	// Nodes are registered once the control plane is up; Start returns when
	// they are Ready.
	Nodes []NodeSpec
	// Dir holds the certificates, etcd's data, the kubeconfigs and the logs.
	// Empty means a new temporary directory, removed by Stop. A given Dir
	// must not hold a testbed already.
	Dir string
	// Log receives the processes' output, each line prefixed with the
	// process name. Nil means one log file per process under Dir/logs.
	Log io.Writer
	// Detached starts processes that outlive the caller: each in a session
	// of its own, without the parent-death signal that otherwise kills them
	// with the calling process. For `gpu-testbed up`; needs Dir, and Log nil.
	Detached bool
	// SimulatorCommand runs the device-plugin simulator of a Detached
	// testbed as a process of its own: Start appends `--kubeconfig <path>`
	// and the program must call RunDevicePluginSimulator (gpu-testbed
	// passes itself and `simulate`). Without it a detached testbed runs no
	// simulator. Attached testbeds run the simulator in a goroutine.
	SimulatorCommand []string
}

// Testbed is a running control plane with kwok-simulated nodes.
type Testbed struct {
	layout     *layout
	removeDir  bool // Dir was created by Start
	restConfig *rest.Config
	client     kubernetes.Interface
	processes  []*process

	// The in-process device-plugin simulator (see RunDevicePluginSimulator).
	stopSimulator func()
	simulatorDone chan struct{}

	stopOnce sync.Once
	stopErr  error
}

// processStopTimeout bounds how long Stop waits for one killed process.
const processStopTimeout = 10 * time.Second

// Start runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler
// and kwok on free loopback ports, registers opts.Nodes, and returns when
// the API server is ready, the controller manager has created the default
// service account, and every node is Ready and schedulable. ctx bounds the
// start only. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Testbed, error) {
	if opts.Detached && (opts.Dir == "" || opts.Log != nil) {
		return nil, errors.New("starting a detached testbed: it needs a Dir and file logs (Log nil)")
	}
	bins := opts.BinaryPaths
	if bins == (BinaryPaths{}) {
		var err error
		if bins, err = clusterBinaries(); err != nil {
			return nil, err
		}
	} else if err := bins.check(false); err != nil {
		return nil, err
	}

	t := &Testbed{}
	if !opts.Detached {
		register(t)
	}
	dir, err := t.prepareDir(opts.Dir)
	if err != nil {
		return nil, errors.Join(err, t.Stop())
	}
	if err := t.start(ctx, dir, bins, opts); err != nil {
		return nil, errors.Join(err, t.Stop())
	}
	return t, nil
}

func (t *Testbed) prepareDir(dir string) (string, error) {
	if dir == "" {
		created, err := createTempDir()
		if created != "" {
			t.removeDir = true
			t.layout = &layout{dir: created}
		}
		return created, err
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving the testbed directory: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd")); err == nil {
		return "", fmt.Errorf("starting a testbed in %s: it already holds one (stop it and remove the directory)", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the testbed directory: %w", err)
	}
	t.layout = &layout{dir: dir}
	return dir, nil
}

func (t *Testbed) start(ctx context.Context, dir string, bins BinaryPaths, opts Options) error {
	l := t.layout
	var err error
	if l.ports, err = allocatePorts(); err != nil {
		return err
	}
	if l.creds, err = writeCredentials(filepath.Join(dir, "pki")); err != nil {
		return err
	}
	for component := range clientIdentities {
		if err := writeKubeconfig(l.kubeconfig(component), l.apiServerURL(), l.creds.caPEM, l.creds.clients[component]); err != nil {
			return err
		}
	}
	if err := writeKwokConfig(l.kwokConfigPath()); err != nil {
		return err
	}
	t.restConfig = restConfigFor(l.apiServerURL(), l.creds.caPEM, l.creds.clients["admin"])
	if t.client, err = kubernetes.NewForConfig(withProtobuf(t.restConfig)); err != nil {
		return fmt.Errorf("creating the Kubernetes client: %w", err)
	}

	output := processOutput{shared: opts.Log, mu: &sync.Mutex{}, logDir: filepath.Join(dir, "logs")}
	if opts.Log == nil {
		if err := os.MkdirAll(output.logDir, 0o700); err != nil {
			return fmt.Errorf("creating the log directory: %w", err)
		}
	}
	run := func(name, path string, args []string) error {
		p, err := startProcess(name, path, args, output, opts.Detached)
		if err != nil {
			return err
		}
		t.processes = append(t.processes, p)
		return nil
	}

	// Any process that exits while starting up fails the start at once,
	// with the end of its log.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watching := make(chan struct{})
	defer close(watching)
	watchExit := func(p *process) {
		go func() {
			select {
			case <-p.exited:
				cancel(p.exitError())
			case <-watching:
			}
		}()
	}

	if err := run("etcd", bins.Etcd, l.etcdArgs()); err != nil {
		return err
	}
	watchExit(t.processes[len(t.processes)-1])
	if err := waitForEtcd(ctx, l.etcdClientURL(), l.creds.caPEM, l.creds.etcdClient); err != nil {
		return err
	}
	if err := run("kube-apiserver", bins.KubeAPIServer, l.apiServerArgs()); err != nil {
		return err
	}
	watchExit(t.processes[len(t.processes)-1])
	if err := waitForAPIServer(ctx, t.client); err != nil {
		return err
	}
	for _, component := range []struct {
		name, path string
		args       []string
	}{
		{"kube-controller-manager", bins.KubeControllerManager, l.controllerManagerArgs()},
		{"kube-scheduler", bins.KubeScheduler, l.schedulerArgs()},
		{"kwok", bins.Kwok, l.kwokArgs()},
	} {
		if err := run(component.name, component.path, component.args); err != nil {
			return err
		}
		watchExit(t.processes[len(t.processes)-1])
	}
	if opts.Detached && len(opts.SimulatorCommand) > 0 {
		cmd := opts.SimulatorCommand
		args := append(append([]string{}, cmd[1:]...), "--kubeconfig", l.kubeconfig(simulatorIdentity))
		if err := run(simulatorIdentity, cmd[0], args); err != nil {
			return err
		}
		watchExit(t.processes[len(t.processes)-1])
	} else if !opts.Detached {
		if err := t.startSimulator(output); err != nil {
			return err
		}
	}

	if err := t.AddNodes(ctx, opts.Nodes); err != nil {
		return err
	}
	if err := waitForDefaultServiceAccount(ctx, t.client); err != nil {
		return err
	}
	names := make([]string, len(opts.Nodes))
	for i, spec := range opts.Nodes {
		names[i] = spec.Name
	}
	return t.WaitForNodesReady(ctx, names...)
}

// Dir is the testbed's working directory.
func (t *Testbed) Dir() string { return t.layout.dir }

// KubeconfigPath is a kubeconfig for a cluster admin (system:masters) that
// verifies the API server's certificate against the testbed's CA.
func (t *Testbed) KubeconfigPath() string { return t.layout.kubeconfig("admin") }

// APIServerURL is the API server's https://127.0.0.1:<port> address.
func (t *Testbed) APIServerURL() string { return t.layout.apiServerURL() }

// RESTConfig is a copy of the cluster admin's client configuration, with
// client-side rate limiting off.
func (t *Testbed) RESTConfig() *rest.Config { return rest.CopyConfig(t.restConfig) }

// Client is a cluster-admin clientset (speaking protobuf, without
// client-side rate limiting).
func (t *Testbed) Client() kubernetes.Interface { return t.client }

// Stop kills every process of the testbed (each process group), waits for
// them to exit, and removes the directory if Start created it. It is safe
// to call more than once.
func (t *Testbed) Stop() error {
	t.stopOnce.Do(func() {
		defer unregister(t)
		if t.stopSimulator != nil {
			t.stopSimulator()
			<-t.simulatorDone
		}
		var errs []error
		for i := len(t.processes) - 1; i >= 0; i-- {
			errs = append(errs, t.processes[i].kill(processStopTimeout))
		}
		if t.removeDir && t.layout != nil {
			if err := os.RemoveAll(t.layout.dir); err != nil {
				errs = append(errs, fmt.Errorf("removing the testbed directory: %w", err))
			}
		}
		t.stopErr = errors.Join(errs...)
	})
	return t.stopErr
}
