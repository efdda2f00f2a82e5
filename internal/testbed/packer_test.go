package testbed

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPackerPathIsKeyedByVersionUnderTheCache(t *testing.T) {
	root := t.TempDir()
	t.Setenv("GPU_TESTBED_CACHE", root)
	want := filepath.Join(root, "bin", "packer-"+PackerVersion, "packer")

	_, err := PackerPath()
	var missing *MissingBinariesError
	require.ErrorAs(t, err, &missing)
	require.Equal(t, []string{"packer (" + want + ")"}, missing.Missing)
	require.Contains(t, err.Error(), "make testbed")

	require.NoError(t, os.MkdirAll(filepath.Dir(want), 0o755))
	require.NoError(t, os.WriteFile(want, []byte("#!/bin/sh\n"), 0o755))
	got, err := PackerPath()
	require.NoError(t, err)
	require.Equal(t, want, got)
}
