package testbed

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSweepRemovesOnlyDirectoriesOfDeadOwners(t *testing.T) {
	root := t.TempDir()
	self, err := processStartTime(os.Getpid())
	require.NoError(t, err)
	owners := map[string]*ProcessRecord{
		"gpu-testbed-dead":     {PID: 1 << 30, StartTime: 1},
		"gpu-testbed-alive":    {PID: os.Getpid(), StartTime: self},
		"gpu-testbed-unowned":  nil,
		"something-else-owned": {PID: 1 << 30, StartTime: 1},
	}
	for name, owner := range owners {
		dir := filepath.Join(root, name)
		require.NoError(t, os.Mkdir(dir, 0o700))
		if owner != nil {
			data, err := json.Marshal(owner)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, ownerFileName), data, 0o600))
		}
	}

	sweepAbandonedTempDirs(root)

	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	require.ElementsMatch(t, []string{"gpu-testbed-alive", "gpu-testbed-unowned", "something-else-owned"}, left)
}
