package bootstrap

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateRejectsPathsThatClimbOutOfTheRoot(t *testing.T) {
	tests := []struct {
		description string
		config      Config
		field       string
	}{
		{"runtime.config_path may not climb with ..",
			Config{Runtime: &RuntimeConfig{Engine: engineContainerd, ConfigPath: "/../../../../tmp/x.toml"}}, "runtime.config_path"},
		{"runtime.runtime_path may not climb with .., even to a binary that exists",
			Config{Runtime: &RuntimeConfig{Engine: engineContainerd, RuntimePath: "/../../usr/bin/env"}}, "runtime.runtime_path"},
		{".. in the middle of a path is rejected too",
			Config{Runtime: &RuntimeConfig{Engine: engineDocker, ConfigPath: "/etc/docker/../../tmp/daemon.json"}}, "runtime.config_path"},
		{"cdi.spec_path may not climb with ..",
			Config{CDI: &CDIConfig{Enabled: true, SpecPath: "/etc/cdi/../../../tmp/nvidia.yaml"}}, "cdi.spec_path"},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			err := tt.config.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.field)
			require.Contains(t, err.Error(), "may not climb out of it")
		})
	}
}

func TestValidateAcceptsPathsInsideTheRoot(t *testing.T) {
	cfg := Config{
		Runtime: &RuntimeConfig{Engine: engineContainerd, ConfigPath: "/etc/containerd/config.toml", RuntimePath: "/usr/local/nvidia/toolkit/nvidia-container-runtime"},
		CDI:     &CDIConfig{Enabled: true, SpecPath: "/var/run/cdi/nvidia..yaml"},
	}
	require.NoError(t, cfg.Validate(), "\"..\" inside a name is not a climb")
}
