package main

import (
	"context"
	"flag"
	"os"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// runInstall builds the testbed binaries a make target needs: `--only demo`
// for make demo, everything (the test set) by default for make testbed.
func runInstall(ctx context.Context, args []string) error {
	opts, err := parseInstallFlags(args)
	if err != nil {
		return err
	}
	opts.Out = os.Stdout
	opts.Terminal = testbed.IsTerminal(os.Stdout)
	return testbed.Install(ctx, opts)
}

func parseInstallFlags(args []string) (testbed.InstallOptions, error) {
	flags := flag.NewFlagSet("install", flag.ContinueOnError)
	toolsDir := flags.String("tools-dir", "tools", "directory holding the tools modules (kube/, tofu/, packer/ with their go.mod)")
	only := flags.String("only", "", `comma-separated sets ("demo": kube, kwok, terraform; "test": everything) or builds (kube, kwok, terraform, tofu, packer, kube-oldest: the oldest supported Kubernetes); default: everything`)
	jobs := flags.Int("jobs", 0, "go commands run at once (default: 2, or 1 on a 1-core machine)")
	if err := flags.Parse(args); err != nil {
		return testbed.InstallOptions{}, err
	}
	opts := testbed.InstallOptions{ToolsDir: *toolsDir, Jobs: *jobs}
	if *only != "" {
		opts.Only = strings.Split(*only, ",")
	}
	return opts, nil
}
