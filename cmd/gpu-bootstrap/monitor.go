package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry"
)

// monitorFlags are `gpu-bootstrap monitor`'s flags.
type monitorFlags struct {
	host     desiredFlags
	gpus     string
	interval time.Duration
	count    int
	duration time.Duration
	format   string
}

func (f *monitorFlags) register(fs *flag.FlagSet) {
	f.host.registerHost(fs)
	fs.StringVar(&f.gpus, "gpus", "", "GPUs to watch, by index or UUID, comma-separated: 0,2 or GPU-… (default every GPU)")
	fs.DurationVar(&f.interval, "interval", time.Second, "time between samples")
	fs.IntVar(&f.count, "count", 0, "stop after this many samples (0: until --duration or Ctrl-C)")
	fs.DurationVar(&f.duration, "duration", 0, "stop after this long, e.g. 10m (0: until --count or Ctrl-C)")
	fs.StringVar(&f.format, "format", "table", "table (a live view on a terminal, one line per GPU otherwise), csv as nvidia-smi --query-gpu prints it (csv, csv,noheader, csv,nounits), or json (one object per line)")
}

func (f *monitorFlags) validate() error {
	switch {
	case f.interval <= 0:
		return fmt.Errorf("--interval %s: a duration above 0, e.g. 1s or 500ms", f.interval)
	case f.count < 0:
		return fmt.Errorf("--count %d: 0 (no limit) or more", f.count)
	case f.duration < 0:
		return fmt.Errorf("--duration %s: 0 (no limit) or more", f.duration)
	}
	return nil
}

// runMonitor samples the GPUs every --interval until --count samples,
// --duration or an interrupt, printing each sample and each event as it
// comes (XIDs and ECC errors from NVML; throttling and lost GPUs derived
// from successive samples), then a summary with findings. Exit 0 when it
// ran to its end or was interrupted; 1 when there is no driver, no GPU, or
// a sample failed.
func runMonitor(ctx context.Context, args []string, env environment) int {
	fs := flag.NewFlagSet("monitor", flag.ContinueOnError)
	var f monitorFlags
	f.register(fs)
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	out, err := newMonitorOutput(f.format, env, f.interval)
	if err == nil {
		err = f.validate()
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap monitor: %v\n", err)
		return exitUsage
	}

	tel := env.openTelemetry(f.host.sysfsRoot())
	defer tel.Close()
	// The first sample finds the driver and the GPUs --gpus names; it is
	// also the run's first sample.
	first, err := tel.Sample(nvml.SampleOptions{})
	if err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap monitor: reading the GPUs: %v\n", err)
		return exitError
	}
	if !first.Driver.Loaded {
		reason := first.Driver.Reason
		if reason == "" {
			reason = "no NVIDIA driver loaded"
		}
		fmt.Fprintf(env.stderr, "gpu-bootstrap monitor: %s: nothing to monitor\n", reason)
		return exitError
	}
	if len(first.GPUs) == 0 {
		fmt.Fprintf(env.stderr, "gpu-bootstrap monitor: the NVIDIA driver %s is loaded but reports no GPU: nothing to monitor\n", first.Driver.Version)
		return exitError
	}
	indices, err := telemetry.SelectGPUs(f.gpus, first.GPUs)
	if err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap monitor: --gpus: %v\n", err)
		return exitUsage
	}
	opts := nvml.SampleOptions{}
	if f.gpus != "" {
		opts.Indices = indices
		first.GPUs = slices.DeleteFunc(first.GPUs, func(g nvml.GPUSample) bool { return !slices.Contains(indices, g.Index) })
	}

	// Ending the run ends the event watch too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if f.duration > 0 {
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}
	m := &monitor{env: env, out: out, rec: telemetry.NewRecorder(), watched: indices}
	code := m.run(ctx, tel, opts, first, f.count, f.interval)
	m.out.summary(m.rec.Summary())
	return code
}

// monitor is one run of the sampling loop.
type monitor struct {
	env     environment
	out     monitorOutput
	rec     *telemetry.Recorder
	watched []int // GPU indices
}

// run records first, then samples every interval until count samples (0:
// no limit) or ctx ends, printing NVML's events between samples.
func (m *monitor) run(ctx context.Context, tel nvml.Telemetry, opts nvml.SampleOptions, first nvml.TelemetrySample, count int, interval time.Duration) int {
	events, err := tel.WatchEvents(ctx)
	if err != nil {
		fmt.Fprintf(m.env.stderr, "gpu-bootstrap monitor: events unavailable (%v); sampling goes on without XID and ECC events\n", err)
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	m.record(first)
	code := exitOK
loop:
	for taken := 1; count == 0 || taken < count; {
		select {
		case <-ctx.Done():
			break loop
		case ev, ok := <-events:
			if !ok {
				events = nil // NVML stopped reporting; go on sampling
				continue
			}
			m.event(ev)
			continue
		case <-ticker.C:
		}
		s, err := tel.Sample(opts)
		if err != nil {
			fmt.Fprintf(m.env.stderr, "gpu-bootstrap monitor: reading the GPUs: %v\n", err)
			code = exitError
			break
		}
		m.record(s)
		taken++
	}
	// Events NVML already delivered belong to this run.
	for events != nil {
		select {
		case ev, ok := <-events:
			if !ok {
				return code
			}
			m.event(ev)
		default:
			return code
		}
	}
	return code
}

// record stamps a sample with the monitor's clock, derives its events and
// prints both.
func (m *monitor) record(s nvml.TelemetrySample) {
	s.Time = m.env.now()
	derived := m.rec.AddSample(s)
	m.out.sample(s, derived)
}

// event prints an NVML event on a watched GPU (or on one NVML could not
// name), with its meaning. Like samples, it is stamped with the monitor's
// clock, so the output has one time line.
func (m *monitor) event(ev nvml.Event) {
	if ev.GPUIndex >= 0 && !slices.Contains(m.watched, ev.GPUIndex) {
		return
	}
	ev.Time = m.env.now()
	m.out.event(m.rec.AddEvent(ev))
}
