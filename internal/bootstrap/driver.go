package bootstrap

import "context"

// DriverConfig pins the NVIDIA driver branch. (Contract stub: owned by the
// driver step's author.)
type DriverConfig struct {
	Branch        string `json:"branch"`                   // "535", "550", "570"
	KernelModules string `json:"kernel_modules,omitempty"` // "open" (default) or "proprietary"
}

func (c *DriverConfig) validate(field string) []error { return nil }

type driverStep struct{ cfg DriverConfig }

func newDriverStep(cfg DriverConfig) Step { return driverStep{cfg: cfg} }

func (driverStep) Name() string { return "driver" }

func (s driverStep) Plan(ctx context.Context, h *Host) ([]Change, error) { return nil, nil }
