package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
	"github.com/gpuinfra/terraform-provider-gpu/internal/healthagent"
)

// healthAgentFlags are `gpu-bootstrap health-agent`'s flags: gpuhealth's
// Settings (the same flags the DaemonSet's args carry), where the API
// server and the node are, and the /metrics exporter's.
type healthAgentFlags struct {
	host       desiredFlags
	settings   gpuhealth.Settings
	kubeconfig string
	nodeName   string
	exporter   exporterFlags
}

func (f *healthAgentFlags) register(fs *flag.FlagSet, env environment) {
	f.host.registerHost(fs)
	f.settings.RegisterFlags(fs)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig `file` to reach the API server with; \"\" uses the pod's in-cluster service account")
	fs.StringVar(&f.nodeName, "node-name", env.getenv("NODE_NAME"), "the `node` this agent runs on (default $NODE_NAME, set from the downward API's spec.nodeName)")
	f.exporter.register(fs)
}

func (f *healthAgentFlags) validate() error {
	if f.nodeName == "" {
		return errors.New("--node-name: the node this agent runs on; in a DaemonSet set NODE_NAME from fieldRef spec.nodeName")
	}
	if err := f.settings.Validate(); err != nil {
		return err
	}
	return f.exporter.validate()
}

// restConfig is the API server's client configuration: the kubeconfig
// given, else the pod's service account.
func (f *healthAgentFlags) restConfig() (*rest.Config, error) {
	if f.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", f.kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no --kubeconfig and not in a pod (%w): pass --kubeconfig, or run it as a DaemonSet with a service account", err)
	}
	return cfg, nil
}

// runHealthAgent keeps the node's AcceleratedHardwareReady condition (and
// its annotations, optional taint and Events) up to date from NVML, and
// serves `metrics`' /metrics and /healthz on --listen, until interrupted.
// Exit 0 when interrupted; 1 when the address cannot be listened on or the
// API server's configuration cannot be read; 64 for bad flags. No driver,
// no GPU or an unreachable API server are states it reports and waits
// out, not exits: a DaemonSet pod must not crash-loop on a CPU node or
// while the control plane restarts.
func runHealthAgent(ctx context.Context, args []string, env environment) int {
	const name = "gpu-bootstrap " + gpuhealth.CommandName
	fs := flag.NewFlagSet(gpuhealth.CommandName, flag.ContinueOnError)
	var f healthAgentFlags
	f.register(fs, env)
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	if err := f.validate(); err != nil {
		fmt.Fprintf(env.stderr, "%s: %v\n", name, err)
		return exitUsage
	}
	cfg, err := f.restConfig()
	if err != nil {
		fmt.Fprintf(env.stderr, "%s: %v\n", name, err)
		return exitError
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(env.stderr, "%s: creating the Kubernetes client: %v\n", name, err)
		return exitError
	}

	tel := env.openTelemetry(f.host.sysfsRoot())
	defer tel.Close()
	exp := f.exporter.newExporter(tel, env, gpuhealth.CommandName)
	endpoint, err := serveMetrics(exp, f.settings.Listen)
	if err != nil {
		fmt.Fprintf(env.stderr, "%s: %v\n", name, err)
		return exitError
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := exp.WatchEvents(ctx); err != nil {
		fmt.Fprintf(env.stderr, "%s: /metrics will not count XID errors: %v\n", name, err)
	}
	fmt.Fprintf(env.stderr, "%s: node %s: sampling every %s, damping %s, taint %t; serving http://%s/metrics (%s)\n",
		name, f.nodeName, f.settings.SampleInterval, f.settings.Damping, f.settings.Taint, endpoint.addr, f.exporter.podLabels())

	agentDone := make(chan error, 1)
	go func() {
		agentDone <- healthagent.Run(ctx, healthagent.Options{
			NodeName: f.nodeName, Client: client, Telemetry: tel, Settings: f.settings, Now: env.now,
			Log: prefixWriter{w: env.stderr, prefix: name + ": "},
		})
	}()

	code := exitOK
	var agentErr error
	agentEnded := false
	select {
	case <-ctx.Done():
	case agentErr = <-agentDone:
		agentEnded = true
	case err := <-endpoint.served:
		fmt.Fprintf(env.stderr, "%s: serving: %v\n", name, err)
		code = exitError
	}
	cancel()
	if err := endpoint.shutdown(ctx); err != nil {
		fmt.Fprintf(env.stderr, "%s: stopping: %v\n", name, err)
		code = exitError
	}
	if !agentEnded {
		agentErr = <-agentDone
	}
	if agentErr != nil {
		// Run ends early only for options it cannot run with.
		fmt.Fprintf(env.stderr, "%s: %v\n", name, agentErr)
		code = exitError
	}
	fmt.Fprintf(env.stderr, "%s: stopped\n", name)
	return code
}
