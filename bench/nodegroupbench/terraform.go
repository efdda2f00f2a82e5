package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/gpuinfra/terraform-provider-gpu/bench/benchtf"
)

// nodeGroupName is the benchmark's node group.
const nodeGroupName = "bench"

// terraformRun runs the Terraform CLI on the benchmark's configuration with
// the provider just built (dev_overrides: no init, no registry) and the
// emulator's AWS environment: no kubeconfig, the cluster is reached through
// EKS as a Terraform Cloud run would.
type terraformRun struct {
	binary, dir, pluginDir string
	env                    map[string]string
}

func (t terraformRun) writeConfig(clusterName, instanceType string, nodes int) error {
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return err
	}
	if err := benchtf.WriteDevOverrides(t.dir, t.pluginDir); err != nil {
		return err
	}
	config := fmt.Sprintf(`terraform {
  required_providers {
    gpu = { source = "gpuinfra/gpu" }
  }
}

provider "gpu" {
  kubernetes {
    eks {
      cluster_name = %[1]q
    }
  }
}

resource "gpu_device_plugin" "nvidia" {
  node_selector = { "eks.amazonaws.com/nodegroup" = %[2]q }
}

resource "gpu_node_group" "bench" {
  cluster_name    = %[1]q
  node_group_name = %[2]q
  node_role_arn   = "arn:aws:iam::111122223333:role/eks-gpu-nodes"
  subnet_ids      = ["subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002"]
  instance_types  = [%[3]q]
  wait_for        = "gpus_allocatable"

  scaling {
    min_size     = 0
    max_size     = %[4]d
    desired_size = %[4]d
  }

  depends_on = [gpu_device_plugin.nvidia]
}
`, clusterName, nodeGroupName, instanceType, nodes)
	return os.WriteFile(filepath.Join(t.dir, "main.tf"), []byte(config), 0o644)
}

func (t terraformRun) run(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, t.binary, append([]string{"-chdir=" + t.dir}, append(args, "-no-color")...)...)
	cmd.Env = append(os.Environ(),
		"TF_CLI_CONFIG_FILE="+filepath.Join(t.dir, benchtf.CLIConfigName),
		"TF_IN_AUTOMATION=1",
		"CHECKPOINT_DISABLE=1",
		"KUBECONFIG=/dev/null",
	)
	for k, v := range t.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("terraform %s: %w\n%s", args[0], err, out)
	}
	return nil
}
