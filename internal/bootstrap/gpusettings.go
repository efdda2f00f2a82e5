package bootstrap

import "context"

// GPUSettingsConfig are optional per-GPU settings. (Contract stub: owned by
// the GPU settings step's author.)
type GPUSettingsConfig struct {
	ComputeMode       string                   `json:"compute_mode,omitempty"`
	PowerLimitWatts   *uint32                  `json:"power_limit_watts,omitempty"`
	ApplicationClocks *ApplicationClocksConfig `json:"application_clocks,omitempty"`
	MIG               *MIGConfig               `json:"mig,omitempty"`
}

// ApplicationClocksConfig are the application clocks to set.
type ApplicationClocksConfig struct {
	MemoryMHz   uint32 `json:"memory_mhz"`
	GraphicsMHz uint32 `json:"graphics_mhz"`
}

// MIGConfig turns MIG on or off and lays out instances.
type MIGConfig struct {
	Enabled  bool     `json:"enabled"`
	Profiles []string `json:"profiles,omitempty"` // one GPU instance per entry, on every MIG-capable GPU
	GPUs     []int    `json:"gpus,omitempty"`     // indexes to configure; all MIG-capable GPUs when empty
}

func (c *GPUSettingsConfig) validate(field string) []error { return nil }

type gpuSettingsStep struct{ cfg GPUSettingsConfig }

func newGPUSettingsStep(cfg GPUSettingsConfig) Step { return gpuSettingsStep{cfg: cfg} }

func (gpuSettingsStep) Name() string { return "gpu" }

func (s gpuSettingsStep) Plan(ctx context.Context, h *Host) ([]Change, error) { return nil, nil }
