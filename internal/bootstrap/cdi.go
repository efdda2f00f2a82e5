package bootstrap

import "context"

// CDIConfig asks for a CDI spec of the GPUs. (Contract stub: owned by the
// CDI step's author.)
type CDIConfig struct {
	Enabled  bool   `json:"enabled"`
	SpecPath string `json:"spec_path,omitempty"` // default /etc/cdi/nvidia.yaml
}

func (c *CDIConfig) validate(field string) []error { return nil }

type cdiStep struct{ cfg CDIConfig }

func newCDIStep(cfg CDIConfig) Step { return cdiStep{cfg: cfg} }

func (cdiStep) Name() string { return "cdi" }

func (s cdiStep) Plan(ctx context.Context, h *Host) ([]Change, error) { return nil, nil }
