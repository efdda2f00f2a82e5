// Command applybench measures `terraform apply` of gpu_device_plugin plus N
// gpu_workload Jobs against an in-process testbed: the wall time, the share of
// it the provider spends waiting on the cluster (the rest is Terraform's and
// the provider's own overhead), and how long after a Job becomes Complete the
// provider notices. Run it with `bash bench/apply.sh`; see bench/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/bench/benchtf"
	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

func main() {
	jobs := flag.Int("jobs", 20, "number of gpu_workload Jobs to apply")
	flag.Parse()
	if err := run(*jobs); err != nil {
		fmt.Fprintf(os.Stderr, "applybench: %v\n", err)
		os.Exit(1)
	}
}

func run(jobs int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	bins, err := testbed.Binaries()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "gpu-applybench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	fmt.Println("building the provider")
	pluginDir := filepath.Join(work, "plugins")
	if err := benchtf.BuildProvider(ctx, filepath.Join(pluginDir, "terraform-provider-gpu")); err != nil {
		return err
	}

	fmt.Println("starting the testbed")
	cluster := k8s.New(k8s.Options{Nodes: benchFleet()})
	tb, err := testbed.Start(ctx, testbed.Options{Backends: []testbed.Backend{cluster}})
	if err != nil {
		return err
	}
	defer func() { _ = tb.Stop() }()

	tf := terraformRun{binary: bins.Terraform, dir: filepath.Join(work, "config"), pluginDir: pluginDir, logPath: filepath.Join(work, "provider.log")}
	if err := tf.writeConfig(cluster.KubeconfigPath(), jobs); err != nil {
		return err
	}

	watcher, err := watchJobCompletions(ctx, cluster.Client(), benchNamespace)
	if err != nil {
		return err
	}

	fmt.Printf("terraform apply: gpu_device_plugin + %d gpu_workload Jobs\n", jobs)
	started := time.Now()
	if err := tf.run(ctx, "apply", "-auto-approve", "-input=false"); err != nil {
		return err
	}
	wall := time.Since(started)

	waits, err := parseClusterWaits(tf.logPath)
	if err != nil {
		return err
	}
	report(wall, started, waits, watcher.completions())

	if err := tf.run(ctx, "destroy", "-auto-approve", "-input=false"); err != nil {
		return err
	}
	return nil
}

// benchFleet is four 8-GPU nodes that advertise no GPUs until the device
// plugin runs on them: 32 GPUs for the Jobs.
func benchFleet() []k8s.NodeSpec {
	var nodes []k8s.NodeSpec
	for i, name := range []string{"p5.48xlarge", "p5.48xlarge", "p4d.24xlarge", "p4d.24xlarge"} {
		instanceType, _ := ec2catalog.Lookup(name)
		nodes = append(nodes, k8s.NodeSpec{Name: fmt.Sprintf("bench-gpu-%d", i), InstanceType: instanceType, WithoutGPUCapacity: true, GFDLabeled: true})
	}
	return nodes
}
