// Command gpu-bootstrap prepares an NVIDIA GPU node: the driver, persistence
// mode, the container runtime, the CDI spec and GPU settings, from a YAML
// desired state; it plans before it acts and a second apply changes nothing.
// It also lists the GPUs (inventory) and checks their health (check) with exit
// codes fit for Docker HEALTHCHECK and Kubernetes probes, watches them over
// time (monitor: nvidia-smi-compatible CSV, NVML events, a summary with
// findings), serves their telemetry with dcgm-exporter's metric names
// (metrics), keeps a Kubernetes node's AcceleratedHardwareReady condition up
// to date from NVML as the node's GPU health agent (health-agent, in a
// DaemonSet; it serves metrics' /metrics too) and chooses GPUs for a
// container (select).
//
// It is the node-side half of terraform-provider-gpu, run from AMI builds
// (Packer), EC2 user data and cloud-init. It needs cgo: NVML is loaded at run
// time from the driver's libnvidia-ml.so.1, and a machine without the driver
// is reported as such, not as a crash.
//
// Exit codes: 0 success (plan: no changes; check: healthy or CPU only),
// 1 error (check: unhealthy), 2 plan has pending changes (as
// `terraform plan -detailed-exitcode`), 64 bad usage.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], osEnvironment())
	stop()
	os.Exit(code)
}
