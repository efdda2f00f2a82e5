// Command nodegroupbench measures `terraform apply` of a gpu_node_group with
// wait_for = "gpus_allocatable" on the testbed's AWS emulator: the AWS API
// calls the create makes (by operation), and the delay between the last node
// advertising its GPUs (seen by this process's own watch) and the apply
// returning. Run it with `bash bench/nodegroup.sh`; see bench/README.md.
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
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/awsemu"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

func main() {
	nodes := flag.Int("nodes", 2, "desired size of the node group")
	instanceType := flag.String("instance-type", "p5.48xlarge", "instance type of the node group")
	runs := flag.Int("runs", 3, "create/destroy cycles")
	flag.Parse()
	if err := run(*nodes, *instanceType, *runs); err != nil {
		fmt.Fprintf(os.Stderr, "nodegroupbench: %v\n", err)
		os.Exit(1)
	}
}

func run(nodes int, instanceType string, runs int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	it, ok := ec2catalog.Lookup(instanceType)
	if !ok || !it.HasGPU() {
		return fmt.Errorf("%s is not an NVIDIA GPU instance type of internal/ec2catalog", instanceType)
	}

	bins, err := testbed.Binaries()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "gpu-nodegroupbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	fmt.Println("building the provider")
	pluginDir := filepath.Join(work, "plugins")
	if err := benchtf.BuildProvider(ctx, filepath.Join(pluginDir, "terraform-provider-gpu")); err != nil {
		return err
	}

	fmt.Println("starting the testbed (AWS emulator, then Kubernetes)")
	emu, cluster := awsemu.NewWithCluster(awsemu.Options{}, k8s.Options{})
	tb, err := testbed.Start(ctx, testbed.Options{Backends: []testbed.Backend{emu, cluster}})
	if err != nil {
		return err
	}
	defer func() { _ = tb.Stop() }()

	tf := terraformRun{binary: bins.Terraform, dir: filepath.Join(work, "config"), pluginDir: pluginDir, env: emu.Env()}
	if err := tf.writeConfig(emu.ClusterName(), instanceType, nodes); err != nil {
		return err
	}
	if err := tf.run(ctx, "apply", "-auto-approve", "-input=false", "-target=gpu_device_plugin.nvidia"); err != nil {
		return err
	}

	var results []result
	for i := range runs {
		watcher, err := watchAllocatable(ctx, cluster.Client(), nodeGroupName, nodes, it.GPUCount)
		if err != nil {
			return err
		}
		emu.ResetCallCounts()
		fmt.Printf("run %d: terraform apply: gpu_node_group %s × %d, wait_for = \"gpus_allocatable\"\n", i+1, instanceType, nodes)
		started := time.Now()
		if err := tf.run(ctx, "apply", "-auto-approve", "-input=false"); err != nil {
			watcher.stop()
			return err
		}
		returned := time.Now()
		calls := emu.CallCounts()
		last, ok := watcher.lastAllocatable()
		watcher.stop()
		if !ok {
			return fmt.Errorf("apply returned but this process never saw %d nodes with %d GPUs allocatable", nodes, it.GPUCount)
		}
		results = append(results, result{wall: returned.Sub(started), notice: returned.Sub(last), calls: calls})
		if err := tf.run(ctx, "destroy", "-auto-approve", "-input=false", "-target=gpu_node_group.bench"); err != nil {
			return err
		}
	}
	report(results)
	return tf.run(ctx, "destroy", "-auto-approve", "-input=false")
}
