package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/bootstrap"
)

// prepare parses the flags of plan, apply and check and builds the desired
// state and the host; ok is false when the command should stop with code.
// needState makes a command without --config or a state flag a usage error
// (plan and apply would have nothing to do; check has its defaults).
func prepare(fs *flag.FlagSet, d *desiredFlags, args []string, env environment, needState bool) (cfg *bootstrap.Config, h *bootstrap.Host, code int, ok bool) {
	d.register(fs)
	if code, ok := parseFlags(fs, args, env); !ok {
		return nil, nil, code, false
	}
	if err := bootstrap.CheckRoot(d.root); err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap %s: %v\n", fs.Name(), err)
		return nil, nil, exitUsage, false
	}
	if needState && !d.anyStateFlag() {
		fmt.Fprintf(env.stderr, "gpu-bootstrap %s: nothing to do: pass --config FILE, or flags such as --runtime containerd (see -h)\n", fs.Name())
		return nil, nil, exitUsage, false
	}
	cfg, err := d.config()
	if err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap %s: %v\n", fs.Name(), err)
		return nil, nil, exitError, false
	}
	return cfg, d.host(env), exitOK, true
}

func runPlan(ctx context.Context, args []string, env environment) int {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	var d desiredFlags
	asJSON := fs.Bool("json", false, "print the plan as JSON (steps, changes, diffs, commands); the exit code is the same")
	cfg, h, code, ok := prepare(fs, &d, args, env, true)
	if !ok {
		return code
	}
	defer h.GPUs.Close()
	plan, err := bootstrap.MakePlan(ctx, h, cfg.Steps())
	if err != nil {
		for _, step := range plan {
			for _, n := range step.Notes {
				fmt.Fprintf(env.stderr, "%s: note: %s\n", step.Step, n)
			}
			for _, w := range step.Warnings {
				fmt.Fprintf(env.stderr, "%s: warning: %s\n", step.Step, w)
			}
		}
		fmt.Fprintf(env.stderr, "gpu-bootstrap plan: %v\n", err)
		return exitError
	}
	if *asJSON {
		if code := writeJSON(env, "plan", plan.JSON()); code != exitOK {
			return code
		}
	} else {
		bootstrap.WritePlan(env.stdout, plan)
	}
	if !plan.Empty() {
		return exitChanges
	}
	return exitOK
}

func runApply(ctx context.Context, args []string, env environment) int {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	var d desiredFlags
	var opts bootstrap.ApplyOptions
	fs.BoolVar(&opts.DryRun, "dry-run", false, "print the files that would be written and the commands that would run; change nothing")
	fs.BoolVar(&opts.RestartRuntime, "restart-runtime", false, "restart the container runtime when its config changed (systemctl restart)")
	skipVerify := fs.Bool("skip-verify", false, "do not check the node's health after applying")
	cfg, h, code, ok := prepare(fs, &d, args, env, true)
	if !ok {
		return code
	}
	defer h.GPUs.Close()
	opts.Out = env.stdout
	report, err := bootstrap.Apply(ctx, h, cfg.Steps(), opts)
	if err != nil {
		// The error lists what was changed before the failure and what not.
		fmt.Fprintf(env.stderr, "gpu-bootstrap apply: %v\n", err)
		return exitError
	}
	if opts.DryRun || *skipVerify {
		return exitOK
	}
	if report.RebootRequired {
		// The health check could only fail until the reboot: the old driver
		// (or nouveau) is still loaded. The summary above says to reboot.
		return exitOK
	}
	health := bootstrap.Verify(ctx, h, cfg)
	health.Warnings = notSaidYet(health.Warnings, report.Warnings)
	writeHealth(env.stdout, health)
	if health.Status == bootstrap.HealthUnhealthy && len(report.Restarts) > 0 && !opts.RestartRuntime {
		fmt.Fprintln(env.stdout, "(some problems may clear once the runtime restarts)")
	}
	return health.ExitCode()
}

// notSaidYet drops the health check's warnings that apply's summary said
// already ("driver: <warning>"): a branch past its end of life is warned
// about by the plan and again by the check after it.
func notSaidYet(health, said []string) []string {
	var out []string
	for _, w := range health {
		repeated := false
		for _, s := range said {
			if s == w || strings.HasSuffix(s, ": "+w) {
				repeated = true
				break
			}
		}
		if !repeated {
			out = append(out, w)
		}
	}
	return out
}
