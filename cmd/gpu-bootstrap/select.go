package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuselect"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// selectFlags are `gpu-bootstrap select`'s flags.
type selectFlags struct {
	host            desiredFlags
	count           int
	minFreeMemory   string
	product         string
	prefer          string
	excludeBusy     bool
	busyUtilization uint
	window          time.Duration
	format          string
}

func (f *selectFlags) register(fs *flag.FlagSet) {
	f.host.registerHost(fs)
	fs.IntVar(&f.count, "count", 1, "how many GPUs to choose")
	fs.StringVar(&f.minFreeMemory, "min-free-memory", "", "free memory each GPU must have, e.g. 20GiB, 40GB, 512MiB")
	fs.StringVar(&f.product, "product", "", "only GPUs whose name contains this, case-insensitively (H100, A100-SXM4-80GB)")
	fs.StringVar(&f.prefer, "prefer", string(gpuselect.PreferIdle), "among GPUs that qualify: "+preferHelp())
	fs.BoolVar(&f.excludeBusy, "exclude-busy", false, "leave out GPUs running a process or at --busy-utilization or above")
	fs.UintVar(&f.busyUtilization, "busy-utilization", 10, "utilization in `percent` at which a GPU counts as busy for --exclude-busy")
	fs.DurationVar(&f.window, "window", time.Second, "how long to watch utilization before choosing (0: one instant reading)")
	fs.StringVar(&f.format, "format", "docker", "output: docker (docker run --gpus value), env (NVIDIA_VISIBLE_DEVICES=...), compose (device_ids list) or json")
}

// preferHelp names each preference with what it does:
// "idle (least utilized, most free memory) or packed (…)".
func preferHelp() string {
	each := make([]string, len(gpuselect.Preferences))
	for i, p := range gpuselect.Preferences {
		each[i] = fmt.Sprintf("%s (%s)", p.Name, p.Description)
	}
	return gpuselect.OrList(each)
}

// request turns the flags into a validated request.
func (f *selectFlags) request() (gpuselect.Request, error) {
	req := gpuselect.Request{
		Count:           f.count,
		Product:         strings.TrimSpace(f.product),
		Prefer:          gpuselect.Preference(f.prefer),
		ExcludeBusy:     f.excludeBusy,
		BusyUtilization: uint32(min(f.busyUtilization, 101)),
	}
	if f.minFreeMemory != "" {
		mib, err := gpuselect.ParseMemory(f.minFreeMemory)
		if err != nil {
			return req, fmt.Errorf("--min-free-memory: %w", err)
		}
		req.MinFreeMiB = mib
	}
	if err := req.Validate(); err != nil {
		return req, err
	}
	if f.window < 0 {
		return req, fmt.Errorf("--window %s: a duration of 0 or more", f.window)
	}
	if !slices.Contains(gpuselect.Formats, f.format) {
		return req, fmt.Errorf("--format %q: use one of %s", f.format, strings.Join(gpuselect.Formats, ", "))
	}
	return req, nil
}

func runSelect(ctx context.Context, args []string, env environment) int {
	fs := flag.NewFlagSet("select", flag.ContinueOnError)
	var f selectFlags
	f.register(fs)
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	req, err := f.request()
	if err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap select: %v\n", err)
		return exitUsage
	}
	machine, err := readMachine(ctx, env, f.host.sysfsRoot(), f.window)
	if err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap select: %v\n", err)
		return exitError
	}
	choice, err := gpuselect.Choose(req, machine)
	if err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap select: %v\n", err)
		return exitError
	}
	out, err := gpuselect.Format(choice, f.format)
	if err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap select: %v\n", err)
		return exitUsage
	}
	fmt.Fprint(env.stdout, out)
	if f.format != "json" {
		explainChoice(env.stderr, choice)
	}
	return exitOK
}

// readMachine reads the GPUs, their links and processes, then watches
// utilization for window so the choice reflects a stretch of time rather
// than one instant.
func readMachine(ctx context.Context, env environment, sysfsRoot string, window time.Duration) (gpuselect.Machine, error) {
	gpus := env.openGPUs(sysfsRoot)
	defer gpus.Close()
	snap, err := gpus.Snapshot()
	if err != nil {
		return gpuselect.Machine{}, err
	}
	if !snap.Driver.Loaded {
		return gpuselect.Machine{}, errors.New(snap.Driver.Reason)
	}
	if window == 0 {
		return gpuselect.MachineFromSnapshot(snap, nil), nil
	}
	telemetry := env.openTelemetry(sysfsRoot)
	defer telemetry.Close()
	// The first sample starts the utilization window; the second reads the
	// utilization NVML recorded over it.
	if _, err := telemetry.Sample(nvml.SampleOptions{}); err != nil {
		return gpuselect.Machine{}, fmt.Errorf("sampling utilization: %w", err)
	}
	timer := time.NewTimer(window)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return gpuselect.Machine{}, fmt.Errorf("interrupted while watching utilization: %w", ctx.Err())
	case <-timer.C:
	}
	sample, err := telemetry.Sample(nvml.SampleOptions{})
	if err != nil {
		return gpuselect.Machine{}, fmt.Errorf("sampling utilization: %w", err)
	}
	return gpuselect.MachineFromSnapshot(snap, &sample), nil
}

// explainChoice says on stderr which GPUs were chosen and why, so the
// choice can be read without disturbing stdout.
func explainChoice(w io.Writer, c gpuselect.Choice) {
	parts := make([]string, len(c.GPUs))
	for i, g := range c.GPUs {
		util := "utilization n/a"
		if g.UtilizationPercent != nil {
			util = fmt.Sprintf("%d%% utilized", *g.UtilizationPercent)
		}
		parts[i] = fmt.Sprintf("GPU %d (%s, %s, %.1f GiB free)", g.Index, g.Name, util, float64(g.FreeMiB)/1024)
	}
	link := ""
	if c.Link != "" {
		link = ", slowest link " + c.Link
	}
	fmt.Fprintf(w, "chose %s%s\n", strings.Join(parts, "; "), link)
}
