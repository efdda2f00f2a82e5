package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/bench/benchtf"
)

// terraformRun runs the Terraform CLI on a configuration of Jobs with one
// build of the provider (dev_overrides: no init, no registry).
type terraformRun struct {
	binary, dir, pluginDir string
}

func (t terraformRun) writeConfig(kubeconfig, namespace string, jobs int) error {
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return err
	}
	if err := benchtf.WriteDevOverrides(t.dir, t.pluginDir); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, `terraform {
  required_providers {
    gpu = { source = "gpuinfra/gpu" }
  }
}

provider "gpu" {
  kubernetes {
    config_path = %q
  }
}

resource "gpu_workload" "job" {
  count = %d
  kind  = "job"

  metadata {
    name      = "bench-${count.index}"
    namespace = %q
  }
  container {
    image   = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
    command = ["nvidia-smi"]
  }
  gpu {
    count = 1
  }
}
`, kubeconfig, jobs, namespace)
	return os.WriteFile(filepath.Join(t.dir, "main.tf"), []byte(b.String()), 0o644)
}

// start starts terraform with args; wait for it with the returned command.
func (t terraformRun) start(ctx context.Context, args []string) (*exec.Cmd, *strings.Builder, error) {
	cmd := exec.CommandContext(ctx, t.binary, append([]string{"-chdir=" + t.dir}, append(args, "-no-color")...)...)
	cmd.Env = append(os.Environ(),
		"TF_CLI_CONFIG_FILE="+filepath.Join(t.dir, benchtf.CLIConfigName),
		"TF_IN_AUTOMATION=1",
		"CHECKPOINT_DISABLE=1",
	)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	return cmd, out, cmd.Start()
}

// finished is the error of a terraform run, nil for success; plan's
// -detailed-exitcode 2 (changes present) is a failure too: a refresh of
// Jobs just applied should find nothing to change.
func finished(cmd *exec.Cmd, out *strings.Builder, err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) || err != nil {
		return fmt.Errorf("terraform %s: %w\n%s", cmd.Args[2], err, out)
	}
	return nil
}
