package bootstrap

import "context"

// RuntimeConfig makes a container engine know the nvidia runtime. (Contract
// stub: owned by the runtime step's author.)
type RuntimeConfig struct {
	Engine       string `json:"engine"`                   // "containerd", "docker", "crio"
	SetAsDefault bool   `json:"set_as_default,omitempty"` // make nvidia the default runtime
	EnableCDI    bool   `json:"enable_cdi,omitempty"`     // turn on the engine's CDI support
	ConfigPath   string `json:"config_path,omitempty"`    // the engine's main config file, when not the usual one
}

func (c *RuntimeConfig) validate(field string) []error { return nil }

type runtimeStep struct {
	cfg RuntimeConfig
	cdi *CDIConfig
}

func newRuntimeStep(cfg RuntimeConfig, cdi *CDIConfig) Step { return runtimeStep{cfg: cfg, cdi: cdi} }

func (runtimeStep) Name() string { return "runtime" }

func (s runtimeStep) Plan(ctx context.Context, h *Host) ([]Change, error) { return nil, nil }
