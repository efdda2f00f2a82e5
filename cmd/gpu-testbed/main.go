// Command gpu-testbed builds, starts and stops the local GPU testbed: a real
// Kubernetes control plane on loopback whose GPU nodes kwok simulates, an
// AWS emulator whose EKS cluster is that control plane, and a Proxmox VE
// emulator with GPU hosts (see internal/testbed and its backends,
// internal/testbed/k8s, internal/testbed/awsemu and
// internal/testbed/pveemu). It is for people and `make demo`; tests use
// those packages directly.
//
//	gpu-testbed install [--only demo] [--jobs N]   build the binaries into the cache (demo: only what make demo runs)
//	gpu-testbed up [--dir DIR]                start a testbed with a default GPU fleet, in the background
//	gpu-testbed env [--dir DIR]               print the shell exports that point clients at its backends
//	gpu-testbed nodes [--dir DIR]             list its nodes and their GPUs
//	gpu-testbed down [--dir DIR]              stop it and remove its files
//	gpu-testbed simulate --kubeconfig K       simulate device-plugin registration and GPU health agents (up starts it)
//	gpu-testbed gpu-fault --node N --gpu I --xid X | --lose | --recover | --ecc-uncorrected C
//	                                          play a GPU fault on a node where the health agent runs
//	gpu-testbed serve-aws FLAGS               run the AWS emulator (up starts it)
//	gpu-testbed serve-proxmox FLAGS           run the Proxmox VE emulator (up starts it)
//	gpu-testbed rootfs --suite S --dir DIR    extract a fresh Debian root (see internal/testbed/debroot)
//
// GPU_TESTBED_KUBERNETES chooses the control plane that up (and every test)
// starts: "newest" (the default, testbed.KubernetesVersion) or "oldest"
// (testbed.OldestKubernetesVersion, the oldest the provider supports; make
// testbed builds it, make demo does not). env prints the choice of the
// running testbed.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = []command{
	{"install", "build the testbed binaries into the cache", runInstall},
	{"up", "start a testbed with a default GPU fleet, in the background", runUp},
	{"env", "print shell exports pointing clients at the running testbed", runEnv},
	{"nodes", "list the testbed's nodes and their GPUs", runNodes},
	{"down", "stop the testbed and remove its files", runDown},
	{"simulate", "simulate the kubelet's device-plugin registration and GPU health agents (up runs it)", runSimulate},
	{"gpu-fault", "play a GPU fault (XID, lost GPU, reset, ECC errors) on a node where the health agent runs", runGPUFault},
	{"serve-aws", "run the AWS emulator: EKS, EC2, Auto Scaling, STS (up runs it)", runServeAWS},
	{"serve-proxmox", "run the Proxmox VE emulator (up runs it)", runServeProxmox},
	{"rootfs", "extract a fresh Debian root made once with debootstrap (tests, CI scripts)", runRootfs},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "gpu-testbed: %v\n", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage()
		return nil
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, args[1:])
		}
	}
	usage()
	return fmt.Errorf("unknown command %q", args[0])
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gpu-testbed <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(os.Stderr, "\nenvironment:\n  %s=%s|%s  the Kubernetes that up and the tests start: %s (default) or %s (the oldest supported; `install --only kube-oldest` builds it)\n",
		testbed.KubernetesChoiceEnv, testbed.KubernetesNewest, testbed.KubernetesOldest, testbed.KubernetesVersion, testbed.OldestKubernetesVersion)
}
