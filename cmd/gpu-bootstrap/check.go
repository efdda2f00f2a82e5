package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/gpuinfra/terraform-provider-gpu/internal/bootstrap"
)

func runCheck(ctx context.Context, args []string, env environment) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var d desiredFlags
	asJSON := fs.Bool("json", false, "print the result as JSON")
	// A config that cannot be read is exit 1: a probe must not report
	// healthy on it.
	cfg, h, code, ok := prepare(fs, &d, args, env, false)
	if !ok {
		return code
	}
	defer h.GPUs.Close()
	health := bootstrap.Verify(ctx, h, cfg)
	if *asJSON {
		if code := writeJSON(env, "check", health); code != exitOK {
			return code
		}
	} else {
		writeHealth(env.stdout, health)
	}
	return health.ExitCode()
}

// writeJSON prints v as indented JSON for --json.
func writeJSON(env environment, command string, v any) int {
	enc := json.NewEncoder(env.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(env.stderr, "gpu-bootstrap %s: %v\n", command, err)
		return exitError
	}
	return exitOK
}

// writeHealth prints a health verdict: the status, then each problem, each
// warning (which does not make the node unhealthy), then what was checked.
func writeHealth(w io.Writer, health bootstrap.Health) {
	fmt.Fprintf(w, "health: %s\n", health.Status)
	if health.Message != "" {
		fmt.Fprintf(w, "  %s\n", health.Message)
	}
	for _, problem := range health.Problems {
		fmt.Fprintf(w, "  problem: %s\n", problem)
	}
	for _, warning := range health.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warning)
	}
	for _, check := range health.Checks {
		fmt.Fprintf(w, "  ok: %s\n", check)
	}
}
