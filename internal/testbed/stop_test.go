package testbed

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStopLeavesNothingBehind also runs a second testbed beside the shared
// one, which is how several test packages run at once.
func TestStopLeavesNothingBehind(t *testing.T) {
	SkipIfUnavailable(t)
	tb := StartForTest(t, Options{})
	var pids []int
	for _, p := range tb.processes {
		pids = append(pids, p.pid())
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
