package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/bench/benchtf"
)

// benchNamespace holds the benchmark's Jobs.
const benchNamespace = "default"

// terraformRun runs the Terraform CLI on the benchmark's configuration with
// the provider just built (dev_overrides: no init, no registry).
type terraformRun struct {
	binary, dir, pluginDir, logPath string
}

func (t terraformRun) writeConfig(kubeconfig string, jobs int) error {
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

resource "gpu_device_plugin" "nvidia" {}

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

  depends_on = [gpu_device_plugin.nvidia]
}
`, kubeconfig, jobs, benchNamespace)
	return os.WriteFile(filepath.Join(t.dir, "main.tf"), []byte(b.String()), 0o644)
}

func (t terraformRun) run(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, t.binary, append([]string{"-chdir=" + t.dir}, append(args, "-no-color")...)...)
	cmd.Env = append(os.Environ(),
		"TF_CLI_CONFIG_FILE="+filepath.Join(t.dir, benchtf.CLIConfigName),
		"TF_LOG_PROVIDER=DEBUG",
		"TF_LOG_PATH="+t.logPath,
		"TF_IN_AUTOMATION=1",
		"CHECKPOINT_DISABLE=1",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("terraform %s: %w\n%s", args[0], err, out)
	}
	return nil
}
