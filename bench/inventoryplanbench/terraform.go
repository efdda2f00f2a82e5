package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/bench/benchtf"
)

// variants are the gpu_inventory arguments each plan reads all nodes with.
var variants = []struct{ name, arguments string }{
	{"default", ``},
	{"include_labels=3 keys", `include_labels = ["node.kubernetes.io/instance-type", "nvidia.com/gpu.product", "topology.kubernetes.io/zone"]`},
	{"include_labels=[\"*\"] (old cost)", `include_labels = ["*"]`},
	{"include_nodes=false", `include_nodes = false`},
}

// terraformPlan runs `terraform plan` with the provider just built (dev_overrides:
// no init, no registry) and TF_LOG_PROVIDER=DEBUG for the provider's own
// log lines.
type terraformPlan struct {
	binary, dir, pluginDir, work string
}

func (t terraformPlan) writeConfig(kubeconfig, arguments string) error {
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
    config_path = %q
  }
}

data "gpu_inventory" "all" {
  source = "kubernetes"
  %s
}

output "totals" {
  value = data.gpu_inventory.all.totals
}

output "nodes" {
  value = data.gpu_inventory.all.nodes == null ? 0 : length(data.gpu_inventory.all.nodes)
}
`, kubeconfig, arguments)
	return os.WriteFile(filepath.Join(t.dir, "main.tf"), []byte(config), 0o644)
}

// result is one timed command.
type result struct {
	variant  string
	wall     time.Duration
	provider time.Duration // the data source's Read, from its log line; 0 for kubectl
	rssKiB   int64         // peak RSS of the provider (or kubectl) process
	requests int64         // LISTs of nodes and pods the API server counted during the plan, from every client
}

func (r result) String() string {
	s := fmt.Sprintf("%-34s wall %6.2f s", r.variant, r.wall.Seconds())
	if r.provider > 0 {
		s += fmt.Sprintf("  provider read %5.2f s  rest %5.2f s", r.provider.Seconds(), (r.wall - r.provider).Seconds())
	}
	s += fmt.Sprintf("  peak RSS %4d MiB", r.rssKiB/1024)
	if r.requests > 0 {
		// Cluster-wide: kwok and the controllers list too, so this is an
		// upper bound on the provider's; BenchmarkListInventory counts the
		// provider's own with a counting round-tripper.
		s += fmt.Sprintf("  cluster LISTs %d", r.requests)
	}
	return s
}

func (t terraformPlan) run(ctx context.Context) (result, error) {
	logPath := filepath.Join(t.dir, "provider.log")
	rssPath := filepath.Join(t.dir, "provider.maxrss")
	_ = os.Remove(logPath)
	_ = os.Remove(rssPath)
	cmd := exec.CommandContext(ctx, t.binary, "-chdir="+t.dir, "plan", "-input=false", "-no-color", "-lock=false")
	cmd.Env = append(os.Environ(),
		"TF_CLI_CONFIG_FILE="+filepath.Join(t.dir, benchtf.CLIConfigName),
		"TF_LOG_PROVIDER=DEBUG",
		"TF_LOG_PATH="+logPath,
		"TF_IN_AUTOMATION=1",
		"CHECKPOINT_DISABLE=1",
		rssFileEnv+"="+rssPath,
	)
	started := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(started)
	if err != nil {
		return result{}, fmt.Errorf("terraform plan: %w\n%s", err, out)
	}
	read, err := providerReadDuration(logPath)
	if err != nil {
		return result{}, err
	}
	rss, err := readMaxRSS(rssPath)
	if err != nil {
		return result{}, err
	}
	return result{wall: wall, provider: read, rssKiB: rss}, nil
}

// providerReadDuration finds the provider's "gpu_inventory read" log line
// (internal/provider/inventory_data_source.go) and returns its duration:
// from the start of the LIST to the state set, before the framework
// encodes it for Terraform.
func providerReadDuration(logPath string) (time.Duration, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "gpu_inventory read") {
			continue
		}
		// hclog writes the fields as JSON after the message; the duration is one of them.
		i := strings.Index(line, "duration=")
		if i < 0 {
			continue
		}
		v := strings.Fields(line[i+len("duration="):])[0]
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq
		}
		return time.ParseDuration(v)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no \"gpu_inventory read\" line in %s", logPath)
}

func readMaxRSS(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading the provider's peak RSS: %w", err)
	}
	var v struct{ MaxRSSKiB int64 }
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, err
	}
	return v.MaxRSSKiB, nil
}
