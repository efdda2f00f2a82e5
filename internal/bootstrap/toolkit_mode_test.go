package bootstrap

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNvidiaRuntimeModeOfTheToolkitsDefaultConfig reads the config.toml
// nvidia-ctk 1.20.1 writes by default (testdata/runtime/toolkit-config,
// written by the oracle with the toolkit's api/config/v1): mode auto, which
// a GPU node resolves to jit-cdi, and CDI's default spec directories.
func TestNvidiaRuntimeModeOfTheToolkitsDefaultConfig(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(runtimeCases, "toolkit-config", "config.toml"))
	require.NoError(t, err)
	root := t.TempDir()
	plantFiles(t, root, map[string]string{nvidiaRuntimeConfig: string(data)})
	m, err := readNvidiaRuntimeMode(context.Background(), &Host{Root: root})
	require.NoError(t, err)
	require.Equal(t, nvidiaRuntimeMode{set: runtimeModeAuto, resolved: runtimeModeJitCDI, specDirs: []string{"/etc/cdi", "/var/run/cdi"}, file: nvidiaRuntimeConfig}, m)
	require.True(t, inSpecDirs("/run/cdi/nvidia.yaml", m.specDirs), "/var/run is /run")
	require.False(t, inSpecDirs("/etc/cdi/sub/nvidia.yaml", m.specDirs), "CDI does not descend into subdirectories")
}
