package bootstrap

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// VerifyConfig is what `check` (and the end of `apply`) expects of the node.
type VerifyConfig struct {
	// ExpectGPUs is how many GPUs NVML must list; 0 means at least one,
	// unless the node is CPU only (see Verify).
	ExpectGPUs int `json:"expect_gpus,omitempty"`
}

func (c *VerifyConfig) validate(field string) []error {
	if c.ExpectGPUs < 0 {
		return []error{fieldError(field+".expect_gpus", "%d is negative; give the number of GPUs the node must have, or 0 for at least one", c.ExpectGPUs)}
	}
	return nil
}

// Health is the verdict of Verify.
type Health struct {
	Status string `json:"status"` // HealthHealthy, HealthUnhealthy, HealthCPUOnly
	// Message is the verdict in one line, for a probe's output: "healthy:
	// 8 GPUs, driver 550.54.15", "CPU only: NVIDIA_VISIBLE_DEVICES is unset,
	// no GPU expected", "unhealthy: <first problem> (and 2 more problems)".
	Message  string   `json:"message"`
	Problems []string `json:"problems,omitempty"`
	// Warnings are what the operator should know that does not make the
	// node unhealthy: the running driver's branch past its end of life,
	// what a step's plan warned about. Shown as "warning:" lines.
	Warnings []string `json:"warnings,omitempty"`
	Checks   []string `json:"checks,omitempty"` // what was checked and passed
}

// Health statuses.
const (
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
	HealthCPUOnly   = "cpu-only"
)

// ExitCode is the exit status of `gpu-bootstrap check`: 0 healthy or CPU
// only, 1 unhealthy (what Docker HEALTHCHECK and Kubernetes exec probes
// expect).
func (h Health) ExitCode() int {
	if h.Status == HealthUnhealthy {
		return 1
	}
	return 0
}

// Verify checks the node against the config: the driver, the GPUs, and that
// every configured step has nothing left to do.
//
// CPU only. The NVIDIA container runtime sets NVIDIA_VISIBLE_DEVICES inside
// containers ("all", indexes, UUIDs; "void" or "none" for no GPU); on a bare
// node it is normally unset. Containers see the host's sysfs, so a container
// that was given no GPU still sees the host's GPUs on the PCI bus. Verify
// reports CPU only (exit 0, nothing else checked) when verify.expect_gpus is
// 0, NVML lists no GPU, and one of these holds:
//
//   - NVIDIA_VISIBLE_DEVICES is "void" or "none": the runtime said so;
//   - it is unset or empty and this is a container (/.dockerenv,
//     /run/.containerenv, $container or $KUBERNETES_SERVICE_HOST): the NVIDIA
//     runtime injected nothing;
//   - it is unset or empty and no NVIDIA PCI function is in sysfs: a machine
//     without NVIDIA GPUs.
//
// So a bare node with GPUs on its bus is never CPU only: its GPUs must work.
// This is the image that runs on CPU and GPU nodes alike (its health check
// passes on the CPU ones), and the GPU image built on a CPU-only builder.
//
// Otherwise every rule below is checked and each failure is a problem:
// the driver is loaded (else the NVIDIA PCI functions found are named);
// NVML lists verify.expect_gpus GPUs, or at least one; no GPU is lost,
// unreadable, has volatile uncorrected ECC errors, pages waiting to be
// retired, rows waiting to be remapped or a failed remapping, or a MIG mode
// switch waiting for a reset; persistence mode is on when the config asks
// for it; the driver branch is driver.branch when set ("lts" and
// "production" resolved for today, as the plan does); and every configured
// step (driver, toolkit, persistence, runtime, cdi, gpu) plans no change;
// and, on a live root, the container engine started after its config last
// changed (see checkRuntimeRestarted).
//
// Warnings do not make the node unhealthy: the running driver's branch past
// NVIDIA's end of life, and what a step's plan warns about (Host.Warn).
func Verify(ctx context.Context, h *Host, cfg *Config) Health {
	if cfg == nil {
		cfg = &Config{}
	}
	defer h.beginPlanning(false)()
	v := &verification{}
	snap, err := h.Snapshot()
	if err != nil {
		v.problem("%v", err)
	}
	if err == nil && len(snap.Devices) == 0 && cfg.Verify.ExpectGPUs == 0 {
		if why := cpuOnlyReason(h, snap); why != "" {
			return Health{
				Status:  HealthCPUOnly,
				Message: "CPU only: " + why + ", no GPU expected",
				Checks:  []string{why, "verify.expect_gpus is 0"},
			}
		}
	}
	if err == nil {
		v.checkDriver(snap, cfg, h.now())
		v.checkGPUCount(snap, cfg.Verify.ExpectGPUs)
		v.checkGPUs(snap, cfg)
	}
	v.checkSteps(ctx, h, cfg.Steps())
	if h.live() {
		v.checkRunningEngine(ctx, h, cfg.Runtime)
	}
	return v.health(snap.Driver.Version, len(snap.Devices))
}

// cpuOnlyReason says why no GPU is expected here, or "" when GPUs are (see
// Verify).
func cpuOnlyReason(h *Host, snap nvml.Snapshot) string {
	visible := strings.TrimSpace(h.getenv("NVIDIA_VISIBLE_DEVICES"))
	switch {
	case visible == "void" || visible == "none":
		return "NVIDIA_VISIBLE_DEVICES is " + visible
	case visible != "":
		return ""
	case inContainer(h):
		return "a container without NVIDIA_VISIBLE_DEVICES"
	case len(snap.PCI) == 0:
		return "NVIDIA_VISIBLE_DEVICES is unset and no NVIDIA PCI device found"
	}
	return ""
}

// inContainer reports the marks container engines leave: Docker's
// /.dockerenv, Podman's /run/.containerenv, the $container variable of
// systemd-nspawn and Podman, and the service variables Kubernetes gives
// every pod.
func inContainer(h *Host) bool {
	return h.Exists("/.dockerenv") || h.Exists("/run/.containerenv") ||
		h.getenv("container") != "" || h.getenv("KUBERNETES_SERVICE_HOST") != ""
}

// verification collects problems, warnings and passed checks.
type verification struct {
	problems []string
	warnings []string
	checks   []string
	// runningEndOfLife is the end-of-life warning of the running driver's
	// branch (checkDriver), so a step that warns the same is not repeated.
	runningEndOfLife string
	// driverBehind: driver.branch is a moving name that moved on while
	// the node runs a branch still of that kind and supported; the
	// driver step's pending move is then a warning, not a problem.
	driverBehind bool
}

// warn records a warning; repeated text is said once.
func (v *verification) warn(format string, args ...any) {
	v.warnings = appendOnce(v.warnings, fmt.Sprintf(format, args...))
}

func (v *verification) problem(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

func (v *verification) check(format string, args ...any) {
	v.checks = append(v.checks, fmt.Sprintf(format, args...))
}

// checkSteps plans every configured step: a step with changes left, or one
// that cannot plan, is a problem; what a step's plan warns about (Host.Warn)
// is a warning, except the driver step's end-of-life warning for the branch
// checkDriver already warned about.
func (v *verification) checkSteps(ctx context.Context, h *Host, steps []Step) {
	for _, step := range steps {
		h.warnings, h.notes = nil, nil
		changes, err := step.Plan(ctx, h)
		for _, w := range h.warnings {
			if w != v.runningEndOfLife {
				v.warn("%s: %s", step.Name(), w)
			}
		}
		h.warnings, h.notes = nil, nil
		switch {
		case err != nil:
			v.problem("%s: %v", step.Name(), err)
		case len(changes) > 0 && v.driverBehind && step.Name() == "driver":
			v.warn("%s: not moved yet: %s (run gpu-bootstrap apply)", step.Name(), changes[0].Summary)
		case len(changes) == 1:
			v.problem("%s: not configured: %s (run gpu-bootstrap apply)", step.Name(), changes[0].Summary)
		case len(changes) > 1:
			v.problem("%s: not configured: %s (and %d more changes; run gpu-bootstrap apply)", step.Name(), changes[0].Summary, len(changes)-1)
		default:
			v.check("%s: configured", step.Name())
		}
	}
}

func (v *verification) health(driverVersion string, gpus int) Health {
	if len(v.problems) == 0 {
		return Health{
			Status:   HealthHealthy,
			Message:  fmt.Sprintf("healthy: %d GPUs, driver %s", gpus, driverVersion),
			Warnings: v.warnings,
			Checks:   v.checks,
		}
	}
	msg := "unhealthy: " + v.problems[0]
	if n := len(v.problems) - 1; n == 1 {
		msg += " (and 1 more problem)"
	} else if n > 1 {
		msg += fmt.Sprintf(" (and %d more problems)", n)
	}
	return Health{Status: HealthUnhealthy, Message: msg, Problems: v.problems, Warnings: v.warnings, Checks: v.checks}
}
