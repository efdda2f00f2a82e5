package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/awsemu"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// upTimeout bounds the start; it takes seconds once the binaries exist.
const upTimeout = 3 * time.Minute

func runUp(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("up", flag.ContinueOnError)
	dirArg := dirFlag(flags)
	flags.Usage = func() {
		fmt.Fprintf(flags.Output(), `Usage: gpu-testbed up [--dir DIR]

Starts a testbed in the background: Kubernetes %s with kwok nodes, the
EKS and EC2 emulator, the Proxmox VE emulator. Its nodes: %s.

gpu-* nodes hand out GPUs through NVIDIA's device plugin: they advertise no
nvidia.com/gpu until it runs on them (gpu_device_plugin). dra-* nodes hand
them out through NVIDIA's DRA driver (labeled %s=true): they
publish no ResourceSlices until its kubelet plugin runs on them
(gpu_dra_driver); dra-mig-* nodes' GPUs are in MIG mode and publish their
MIG devices instead.

`, testbed.KubernetesVersion, fleetSummary(), k8s.DRANodeLabel)
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return err
	}
	dir, err := testbedDir(*dirArg)
	if err != nil {
		return err
	}
	if err := clearStaleTestbed(dir, *dirArg); err != nil {
		return err
	}
	nodes, err := fleetNodes()
	if err != nil {
		return err
	}

	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locating gpu-testbed for the device-plugin simulator: %w", err)
	}
	// The AWS emulator starts first: it serves the token webhook the API
	// server is started with, and registers its node groups' nodes into
	// the cluster.
	emu, cluster := awsemu.NewWithCluster(
		awsemu.Options{Command: []string{self, "serve-aws"}},
		k8s.Options{Nodes: nodes, SimulatorCommand: []string{self, "simulate"}},
	)

	pve := pveemu.New(pveemu.Options{Command: []string{self, "serve-proxmox"}})

	ctx, cancel := context.WithTimeout(ctx, upTimeout)
	defer cancel()
	started := time.Now()
	tb, err := testbed.Start(ctx, testbed.Options{Dir: dir, Detached: true, Backends: []testbed.Backend{emu, cluster, pve}})
	if err != nil {
		return fmt.Errorf("starting the testbed: %w", err)
	}
	state := tb.State()

	fmt.Printf("GPU testbed up in %s: Kubernetes %s at %s\n", time.Since(started).Round(100*time.Millisecond), cluster.KubernetesVersion(), cluster.APIServerURL())
	for _, p := range state.Processes {
		fmt.Printf("  %-24s pid %d\n", p.Name, p.PID)
	}
	fmt.Printf("nodes: %s\n", fleetSummary())
	fmt.Println("       gpu-* nodes advertise no nvidia.com/gpu until NVIDIA's device plugin runs on them (gpu_device_plugin)")
	fmt.Printf("       dra-* nodes (%s=true) publish no ResourceSlices until NVIDIA's DRA driver runs on them (gpu_dra_driver)\n", k8s.DRANodeLabel)
	fmt.Printf("EKS:   cluster %q in %s, emulated at %s (eval \"$(gpu-testbed env%s)\"; aws eks describe-cluster --name %s)\n",
		emu.ClusterName(), emu.Region(), emu.EKSEndpoint(), dirSuffix(*dirArg), emu.ClusterName())
	fmt.Printf("PVE:   Proxmox VE %s emulated at %s: nodes %s, %s, %s, %s, %s (eval \"$(gpu-testbed env%s)\"; curl --cacert \"$PM_CA_CERT_FILE\" -H \"Authorization: PVEAPIToken=$PM_API_TOKEN_ID=$PM_API_TOKEN_SECRET\" \"$PM_API_URL/nodes\")\n",
		pveemu.Version, pve.URL(), pveemu.NodeA6000, pveemu.NodeH100, pveemu.NodeL40S, pveemu.NodeL40SB, pveemu.NodeCPU, dirSuffix(*dirArg))
	fmt.Printf("logs:  %s/logs\n\n", dir)
	fmt.Println(exports(state.Env))
	fmt.Println("Stop it with: gpu-testbed down" + dirSuffix(*dirArg))
	return nil
}

// clearStaleTestbed refuses to start over a live testbed and removes the
// files of a dead one.
func clearStaleTestbed(dir, dirArg string) error {
	state, found, err := testbed.ReadState(dir)
	if err != nil {
		return err
	}
	if found {
		if running := state.Running(); len(running) > 0 {
			return fmt.Errorf("a testbed is already running in %s (%s pid %d); stop it with `gpu-testbed down%s`",
				dir, running[0].Name, running[0].PID, dirSuffix(dirArg))
		}
	}
	return testbed.RemoveFiles(dir)
}

func fleetSummary() string {
	var parts []string
	for _, group := range defaultFleet {
		part := fmt.Sprintf("%d× %s", group.count, group.instanceType)
		switch {
		case len(group.mig) > 0:
			part += fmt.Sprintf(" (DRA, MIG %s×%d per GPU)", group.mig[0], len(group.mig))
		case group.dra:
			part += " (DRA)"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

func dirSuffix(dir string) string {
	if dir == "" {
		return ""
	}
	return " --dir " + dir
}
