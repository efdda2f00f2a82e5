package k8s

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// TestStopLeavesNothingBehind also runs a second testbed beside the shared
// one, which is how several test packages run at once.
func TestStopLeavesNothingBehind(t *testing.T) {
	testbed.SkipIfUnavailable(t)
	tb := testbed.StartForTest(t, testbed.Options{Backends: []testbed.Backend{New(Options{})}})
	var pids []int
	for _, p := range tb.State().Processes {
		pids = append(pids, p.PID)
	}
	require.Len(t, pids, 5)
	dir := tb.Dir()

	require.NoError(t, tb.Stop())
	for _, pid := range pids {
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		require.ErrorIs(t, err, os.ErrNotExist, "process %d is still there", pid)
	}
	_, err := os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "the temporary directory is still there")
	require.NoError(t, tb.Stop(), "a second Stop is harmless")
}
