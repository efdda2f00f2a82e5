// Package nvml is the node bootstrap's narrow view of the NVIDIA driver: a
// snapshot of the GPUs (identity, memory, health, MIG, processes, clocks,
// topology) and the handful of settings the bootstrap changes (persistence,
// compute mode, power limit, application clocks, MIG).
//
// It wraps github.com/NVIDIA/go-nvml, which loads libnvidia-ml.so at run time
// through cgo. A machine without the driver is a state, not a failure:
// Snapshot reports Driver.Loaded=false with the reason, and still lists the
// NVIDIA PCI functions it finds in sysfs, so "GPUs present, driver missing"
// and "no GPUs at all" can be told apart.
//
// Only the bootstrap (cmd/gpu-bootstrap, internal/bootstrap) imports this
// package: the Terraform provider is built with CGO_ENABLED=0.
package nvml
