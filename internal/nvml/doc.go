// Package nvml is the node bootstrap's narrow view of the NVIDIA driver: a
// snapshot of the GPUs (identity, memory, health, MIG, processes, clocks,
// topology), the handful of settings the bootstrap changes (persistence,
// compute mode, power limit, application clocks, MIG), and telemetry for the
// monitoring commands (Sample: readings and counters over time; WatchEvents:
// XID and ECC events).
//
// It wraps github.com/NVIDIA/go-nvml, which loads libnvidia-ml.so at run time
// through cgo. A machine without the driver is a state, not a failure:
// Snapshot reports Driver.Loaded=false with the reason, and still lists the
// NVIDIA PCI functions it finds in sysfs, so "GPUs present, driver missing"
// and "no GPUs at all" can be told apart.
//
// Snapshot and Sample read each GPU through one reader (gpu_reader.go), as
// go-nvlib reads a device: each asks for its own set of fields, and both
// follow the same rules. A reading the GPU does not support is asked once
// while NVML stays initialized; a GPU that answers ERROR_GPU_IS_LOST gets
// no further call in that pass and is listed with Lost and what was read.
//
// Only the bootstrap (cmd/gpu-bootstrap, internal/bootstrap and the
// packages of its commands) and the testbed's Kubernetes backend
// (internal/testbed/k8s, which runs the health agent over the nvmltest
// double; its tests and cmd/gpu-testbed build with cgo) import this
// package: the Terraform provider is built with CGO_ENABLED=0.
//
// Four small pieces overlap github.com/NVIDIA/go-nvlib: bus-id spelling,
// architecture names, MIG profile names and the sysfs PCI scan. go-nvlib is
// not a dependency because no version the module proxy serves fits: v0.13.0
// needs go-nvml v0.13.4-1 and v0.12.0 v0.13.3-1 (this module pins
// v0.13.3-0); v0.11.0 builds with it but names no Rubin architecture, and
// its PCI scanner (any version) fails a device whose config-space, resource
// or IOMMU files it cannot read. The copies here are held to go-nvlib
// v0.13.0's behavior by nvlib_pinned_test.go, with go-nvlib's own test
// tables; the few deliberate differences are named there. When go-nvml is
// raised to v0.13.4-1, device.GetArchitectureAsString and MigProfileInfo
// can replace architectureName and profileName.
package nvml
