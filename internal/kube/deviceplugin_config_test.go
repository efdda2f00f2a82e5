package kube

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestDevicePluginConfigRendersTheUpstreamSchema(t *testing.T) {
	no := false
	tests := []struct {
		description string
		golden      string
		config      func(c *DevicePluginConfig)
		resource    string
	}{
		{
			description: "The defaults spell out every flag the plugin would assume.",
			golden:      "defaults.yaml",
			config:      func(*DevicePluginConfig) {},
			resource:    "nvidia.com/gpu",
		},
		{
			description: "Time-slicing lists its resources under sharing.timeSlicing.",
			golden:      "time-slicing.yaml",
			config: func(c *DevicePluginConfig) {
				c.TimeSlicing = &SharingConfig{Resources: []SharedResource{{Name: "nvidia.com/gpu", Replicas: 4}}}
			},
			resource: "nvidia.com/gpu",
		},
		{
			description: "renameByDefault advertises the shared resource.",
			golden:      "time-slicing-renamed.yaml",
			config: func(c *DevicePluginConfig) {
				c.FailOnInitError = false
				c.TimeSlicing = &SharingConfig{RenameByDefault: true, FailRequestsGreaterThanOne: &no, Resources: []SharedResource{{Name: "nvidia.com/gpu", Replicas: 10}}}
			},
			resource: "nvidia.com/gpu.shared",
		},
		{
			description: "MPS with the mixed MIG strategy and CDI device lists.",
			golden:      "mps-mig-mixed.yaml",
			config: func(c *DevicePluginConfig) {
				c.MIGStrategy = "mixed"
				c.DeviceListStrategy = []string{"cdi-annotations", "envvar"}
				c.DeviceIDStrategy = "index"
				c.PassDeviceSpecs = true
				c.MPS = &SharingConfig{Resources: []SharedResource{{Name: "nvidia.com/gpu", Replicas: 2}, {Name: "nvidia.com/mig-1g.10gb", Rename: "nvidia.com/mig-small", Replicas: 3}}}
			},
			resource: "nvidia.com/gpu",
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			config := DefaultDevicePluginConfig()
			tt.config(&config)
			rendered, err := config.Render()
			require.NoError(t, err)

			path := filepath.Join("testdata", "deviceplugin", tt.golden)
			if *updateGolden {
				require.NoError(t, os.WriteFile(path, rendered, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, string(want), string(rendered))

			again, err := config.Render()
			require.NoError(t, err)
			require.Equal(t, rendered, again, "the same config renders the same bytes")

			parsed, err := ParseDevicePluginConfig(rendered)
			require.NoError(t, err)
			require.Equal(t, config, parsed, "parsing the rendered file gives the config back")
			require.Equal(t, tt.resource, config.AdvertisedGPUResource())
		})
	}
}

func TestParseDevicePluginConfig(t *testing.T) {
	t.Run("A file with only a version gets the plugin's defaults.", func(t *testing.T) {
		c, err := ParseDevicePluginConfig([]byte("version: v1\n"))
		require.NoError(t, err)
		require.Equal(t, DefaultDevicePluginConfig(), c)
	})
	t.Run("An unknown version is rejected.", func(t *testing.T) {
		_, err := ParseDevicePluginConfig([]byte("version: v2\n"))
		require.ErrorContains(t, err, `unknown version "v2"`)
	})
	t.Run("A device list strategy replaces the default list.", func(t *testing.T) {
		c, err := ParseDevicePluginConfig([]byte("version: v1\nflags:\n  plugin:\n    deviceListStrategy: [volume-mounts]\n"))
		require.NoError(t, err)
		require.Equal(t, []string{"volume-mounts"}, c.DeviceListStrategy)
	})
}

func TestCountsAsGPUs(t *testing.T) {
	mixed := DefaultDevicePluginConfig()
	mixed.MIGStrategy = "mixed"
	require.True(t, mixed.CountsAsGPUs("nvidia.com/mig-1g.10gb"), "mixed MIG devices are GPUs the plugin advertises")
	require.True(t, mixed.CountsAsGPUs("nvidia.com/gpu"))
	require.False(t, DefaultDevicePluginConfig().CountsAsGPUs("nvidia.com/mig-1g.10gb"), "without mixed, MIG resources are not this plugin's")
}
