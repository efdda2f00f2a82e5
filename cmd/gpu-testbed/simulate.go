package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// runSimulate runs the simulators of node agents (NVIDIA's device plugin
// and DRA kubelet plugin, gpu-bootstrap's health agent: k8s.RunSimulators)
// of a detached testbed in the foreground; `up` starts it in the
// background, and `down` stops it with the rest of the testbed.
func runSimulate(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("simulate", flag.ContinueOnError)
	kubeconfig := flags.String("kubeconfig", "", "kubeconfig of the testbed to simulate NVIDIA's device plugin and DRA kubelet plugin on")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" {
		return errors.New("simulate needs --kubeconfig")
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", *kubeconfig, err)
	}
	// A kubelet per node would report at once: no client-side throttling.
	config.QPS, config.Burst = -1, 1000
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	if err := k8s.RunSimulators(ctx, client, os.Stderr); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
