package bootstrap

import "context"

// VerifyConfig is what `check` (and the end of `apply`) expects of the node.
// (Contract stub: owned by the verify author.)
type VerifyConfig struct {
	ExpectGPUs int `json:"expect_gpus,omitempty"` // 0 = at least one
}

func (c *VerifyConfig) validate(field string) []error { return nil }

// Health is the verdict of Verify.
type Health struct {
	Status   string   `json:"status"` // HealthHealthy, HealthUnhealthy, HealthCPUOnly
	Problems []string `json:"problems,omitempty"`
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
func Verify(ctx context.Context, h *Host, cfg *Config) Health { return Health{Status: HealthHealthy} }
