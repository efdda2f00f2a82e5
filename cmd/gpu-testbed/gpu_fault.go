package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// runGPUFault plays a GPU fault on a node of the running testbed where
// gpu-bootstrap's health agent runs (k8s.RequestGPUFault: a node
// annotation `simulate` plays on the node's NVML double), and returns once
// it has been played.
func runGPUFault(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("gpu-fault", flag.ContinueOnError)
	dirArg := dirFlag(flags)
	node := flags.String("node", "", "the node whose GPU faults (required)")
	var f k8s.GPUFault
	flags.IntVar(&f.GPU, "gpu", 0, "the GPU's NVML index")
	flags.Uint64Var(&f.XID, "xid", 0, "report this XID on the GPU (79 also makes it fall off the bus)")
	flags.BoolVar(&f.Lose, "lose", false, "make the GPU fall off the bus without an XID event")
	flags.BoolVar(&f.Recover, "recover", false, "reset the GPU: it answers again, its since-boot counters start from 0")
	flags.Uint64Var(&f.ECCCorrected, "ecc-corrected", 0, "add this many corrected (single-bit) ECC errors")
	flags.Uint64Var(&f.ECCUncorrected, "ecc-uncorrected", 0, "add this many uncorrected (double-bit) ECC errors")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *node == "" {
		return errors.New("gpu-fault needs --node")
	}
	if err := f.Validate(); err != nil {
		return fmt.Errorf("gpu-fault: give one of --xid N, --lose, --recover, --ecc-corrected N / --ecc-uncorrected N: %w", err)
	}
	state, err := runningTestbed(*dirArg)
	if err != nil {
		return err
	}
	kubeconfig := state.Env["KUBECONFIG"]
	if kubeconfig == "" {
		return fmt.Errorf("the testbed in %s runs no Kubernetes backend", state.Dir)
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	if err := k8s.RequestGPUFault(ctx, client, *node, f); err != nil {
		return err
	}
	fmt.Printf("node %s: %s\n", *node, f)
	return nil
}
