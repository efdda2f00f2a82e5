// Package bootstrap turns a typed desired state for a GPU node (driver branch,
// persistence mode, container runtime, CDI spec, GPU settings) into a plan —
// the list of changes that would bring the host there — and applies it.
//
// Each step (driver.go, persistence.go, runtime.go, cdi.go, gpusettings.go,
// verify.go) has a Plan that only reads the host and returns Changes; an empty
// plan means the host already matches and Apply does nothing. Every side
// effect goes through Host: files under Host.Root (written atomically, with a
// backup of what they replace), commands through a Runner (no shell strings,
// so tests record them), and GPUs through nvml.Library.
package bootstrap
