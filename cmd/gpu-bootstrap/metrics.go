package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/dcgm"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/podresources"
)

// metricsFlags are `gpu-bootstrap metrics`' flags.
type metricsFlags struct {
	host     desiredFlags
	listen   string
	exporter exporterFlags
}

func (f *metricsFlags) register(fs *flag.FlagSet) {
	f.host.registerHost(fs)
	fs.StringVar(&f.listen, "listen", "127.0.0.1:9400", "`address` to serve /metrics and /healthz on; :9400 (dcgm-exporter's port) listens on every interface")
	f.exporter.register(fs)
}

func (f *metricsFlags) validate() error {
	if f.listen == "" {
		return errors.New("--listen: an address such as 127.0.0.1:9400 or :9400")
	}
	return f.exporter.validate()
}

// exporterFlags are the flags of the dcgm-exporter-compatible /metrics,
// which `metrics` and `health-agent` both serve.
type exporterFlags struct {
	maxAge        time.Duration
	podSocket     string
	hostnameLabel dcgm.HostnameLabel
}

func (f *exporterFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.maxAge, "max-age", time.Second, "serve a scrape from the last NVML pass when it is younger than this; 0 reads NVML for every scrape (concurrent scrapes share one pass either way)")
	fs.StringVar(&f.podSocket, "pod-resources-socket", podresources.DefaultSocket, "the kubelet's PodResources socket: while it exists, series of a GPU or MIG device a container holds get pod, namespace and container labels; \"\" for none")
	fs.TextVar(&f.hostnameLabel, "hostname-label", dcgm.LowerHostname, "`name` of the label holding NODE_NAME or the host's name: hostname (dcgm-exporter 4.6.0-4.8.3 and later), Hostname (dcgm-exporter 3.x to 4.5.3-4.8.2), or both while dashboards keyed on Hostname move")
}

func (f *exporterFlags) validate() error {
	if f.maxAge < 0 {
		return fmt.Errorf("--max-age %s: 0 (a pass per scrape) or more, e.g. 1s", f.maxAge)
	}
	return nil
}

// newExporter is the dcgm-exporter-compatible exporter over tel; command
// prefixes its log lines.
func (f *exporterFlags) newExporter(tel nvml.Telemetry, env environment, command string) *dcgm.Exporter {
	opts := dcgm.Options{
		Hostname:      hostname(env),
		HostnameLabel: f.hostnameLabel,
		MaxAge:        f.maxAge,
		Log:           prefixWriter{w: env.stderr, prefix: "gpu-bootstrap " + command + ": "},
	}
	if f.podSocket != "" {
		opts.Holders = podresources.Lister{Socket: f.podSocket}
	}
	return dcgm.New(tel, opts)
}

// podLabels says where the exporter's pod labels come from, for the
// serving line.
func (f *exporterFlags) podLabels() string {
	if f.podSocket == "" {
		return "no pod labels"
	}
	return "pod labels from " + f.podSocket + " while it exists"
}

// metricsEndpoint is an exporter's /metrics and /healthz served in the
// background.
type metricsEndpoint struct {
	addr   net.Addr
	srv    *http.Server
	served chan error // the error Serve returned
}

// serveMetrics listens on listen and serves exp there until shutdown.
func serveMetrics(exp *dcgm.Exporter, listen string) (*metricsEndpoint, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", listen, err)
	}
	m := &metricsEndpoint{
		addr:   ln.Addr(),
		srv:    &http.Server{Handler: exp.Handler(), ReadHeaderTimeout: 10 * time.Second},
		served: make(chan error, 1),
	}
	go func() { m.served <- m.srv.Serve(ln) }()
	return m, nil
}

// shutdown stops serving, waiting up to 5 s for scrapes in progress.
func (m *metricsEndpoint) shutdown(ctx context.Context) error {
	shutdownCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer stop()
	return m.srv.Shutdown(shutdownCtx)
}

// runMetrics serves the GPUs' telemetry as dcgm-exporter does, for
// Prometheus, until interrupted. Exit 0 when interrupted (SIGINT, SIGTERM);
// 1 when there is no driver or no GPU at start, or the address cannot be
// listened on. A driver that goes away later turns /metrics into 503s, so
// Prometheus' up says so, and the process keeps serving.
func runMetrics(ctx context.Context, args []string, env environment) int {
	fs := flag.NewFlagSet("metrics", flag.ContinueOnError)
	var f metricsFlags
	f.register(fs)
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	if err := f.validate(); err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap metrics: %v\n", err)
		return exitUsage
	}

	tel := env.openTelemetry(f.host.sysfsRoot())
	defer tel.Close()
	exp := f.exporter.newExporter(tel, env, "metrics")

	// The first pass finds the driver and the GPUs; it also serves the
	// first scrapes.
	first, err := exp.Scrape(ctx)
	var noDriver *dcgm.NoDriverError
	switch {
	case errors.As(err, &noDriver):
		reason := noDriver.Reason
		if reason == "" {
			reason = "no NVIDIA driver loaded"
		}
		fmt.Fprintf(env.stderr, "gpu-bootstrap metrics: %s: nothing to serve\n", reason)
		return exitError
	case err != nil:
		fmt.Fprintf(env.stderr, "gpu-bootstrap metrics: %v\n", err)
		return exitError
	case first.GPUs == 0:
		fmt.Fprintln(env.stderr, "gpu-bootstrap metrics: the NVIDIA driver is loaded but reports no GPU: nothing to serve")
		return exitError
	}

	endpoint, err := serveMetrics(exp, f.listen)
	if err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap metrics: %v\n", err)
		return exitError
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := exp.WatchEvents(ctx); err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap metrics: XID errors will not be reported: %v\n", err)
	}
	fmt.Fprintf(env.stderr, "gpu-bootstrap metrics: serving %d GPUs at http://%s/metrics (NVML read at most once per %s; %s)\n",
		first.GPUs, endpoint.addr, f.exporter.maxAge, f.exporter.podLabels())

	select {
	case <-ctx.Done():
	case err := <-endpoint.served:
		fmt.Fprintf(env.stderr, "gpu-bootstrap metrics: serving: %v\n", err)
		return exitError
	}
	if err := endpoint.shutdown(ctx); err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap metrics: stopping: %v\n", err)
		return exitError
	}
	fmt.Fprintln(env.stderr, "gpu-bootstrap metrics: stopped")
	return exitOK
}

// hostname is dcgm-exporter's hostname (Hostname before 4.8.3) label's value: NODE_NAME (set on
// Kubernetes from the downward API), else the host's name.
func hostname(env environment) string {
	if name := env.getenv("NODE_NAME"); name != "" {
		return name
	}
	name, _ := os.Hostname()
	return name
}

// prefixWriter writes each line it is given after a prefix.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
