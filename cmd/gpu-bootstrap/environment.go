package main

import (
	"io"
	"os"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/bootstrap"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// environment is everything a command touches outside its arguments, so
// tests run the real commands against go-nvml's mocks and a temporary root.
type environment struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	// openGPUs returns the NVML view of the machine; sysfsRoot holds
	// bus/pci/devices.
	openGPUs func(sysfsRoot string) nvml.Library
	// openTelemetry returns the NVML view the monitoring commands (monitor,
	// metrics, select) sample.
	openTelemetry func(sysfsRoot string) nvml.Telemetry
	// runner runs commands for apply (plan and --dry-run never run any
	// that change the host).
	runner bootstrap.Runner
}

func osEnvironment() environment {
	return environment{
		stdout: os.Stdout,
		stderr: os.Stderr,
		getenv: os.Getenv,
		now:    time.Now,
		openGPUs: func(sysfsRoot string) nvml.Library {
			return nvml.New(nvml.Options{SysfsRoot: sysfsRoot})
		},
		openTelemetry: func(sysfsRoot string) nvml.Telemetry {
			return nvml.New(nvml.Options{SysfsRoot: sysfsRoot})
		},
		runner: bootstrap.ExecRunner{},
	}
}
