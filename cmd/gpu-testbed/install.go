package main

import (
	"context"
	"flag"
	"os"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

func runInstall(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("install", flag.ContinueOnError)
	toolsDir := flags.String("tools-dir", "tools", "directory holding the kube tools module (kube/go.mod)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	return testbed.Install(ctx, *toolsDir, os.Stdout)
}
