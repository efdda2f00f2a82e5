package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes shared by every command.
const (
	exitOK      = 0
	exitError   = 1
	exitChanges = 2  // plan: changes are pending
	exitUsage   = 64 // EX_USAGE from sysexits.h: flag 's own 2 would read as "changes pending"
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, env environment) int
}

func commands() []command {
	return []command{
		{"inventory", "list the GPUs, the driver and the NVIDIA PCI devices (--json for a machine-readable form)", runInventory},
		{"plan", "show what apply would change; exit 2 when something would", runPlan},
		{"apply", "make the changes the plan shows (--dry-run prints them instead)", runApply},
		{"check", "check the node's GPU health; exit 0 healthy or CPU only, 1 unhealthy", runCheck},
		{"monitor", "watch the GPUs over time: a table, nvidia-smi CSV or JSON lines, events (XID, throttling, a GPU lost) as they come, a summary with findings", runMonitor},
		{"metrics", "serve the GPUs' telemetry for Prometheus with dcgm-exporter's metric names and labels (/metrics, /healthz)", runMetrics},
		{"health-agent", "keep the node's AcceleratedHardwareReady condition (EKS's), Events and an optional taint up to date from NVML, and serve /metrics as `metrics` does; runs as a DaemonSet", runHealthAgent},
		{"select", "choose GPUs for a container by free memory, utilization and NVLink; prints them for docker run --gpus, NVIDIA_VISIBLE_DEVICES or Compose", runSelect},
		{"version", "print the version", runVersion},
	}
}

func run(ctx context.Context, args []string, env environment) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(env.stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, cmd := range commands() {
		if cmd.name == args[0] {
			return cmd.run(ctx, args[1:], env)
		}
	}
	fmt.Fprintf(env.stderr, "gpu-bootstrap: unknown command %q\n\n", args[0])
	usage(env.stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: gpu-bootstrap <command> [flags]")
	fmt.Fprintln(w, "\nCommands:")
	for _, cmd := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintln(w, "\nRun `gpu-bootstrap <command> -h` for the flags of a command.")
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 error (check: unhealthy), 2 plan has changes, 64 bad usage.")
}

// parseFlags parses a command's flags; ok is false when the command should
// stop with code.
func parseFlags(fs *flag.FlagSet, args []string, env environment) (code int, ok bool) {
	fs.SetOutput(env.stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.stderr, "gpu-bootstrap %s: unexpected argument %q\n", fs.Name(), strings.Join(fs.Args(), " "))
		return exitUsage, false
	}
	return exitOK, true
}

func runVersion(_ context.Context, args []string, env environment) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if code, ok := parseFlags(fs, args, env); !ok {
		return code
	}
	fmt.Fprintf(env.stdout, "gpu-bootstrap %s\n", version)
	return exitOK
}
