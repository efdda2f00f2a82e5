package proxmox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseUPID(t *testing.T) {
	u, err := ParseUPID("UPID:pve-a6000:000A1B2C:0123ABCD:65F0A1B2:qmstart:101:terraform@pve!gpu:")
	require.NoError(t, err)
	require.Equal(t, UPID{Raw: "UPID:pve-a6000:000A1B2C:0123ABCD:65F0A1B2:qmstart:101:terraform@pve!gpu:", Node: "pve-a6000", Type: "qmstart", ID: "101", User: "terraform@pve!gpu"}, u)

	for _, bad := range []string{"", "UPID:pve:1:2", "TASK:pve:000A1B2C:0123ABCD:65F0A1B2:qmstart:101:root@pam:"} {
		_, err := ParseUPID(bad)
		require.Error(t, err, bad)
	}
}

func TestTaskSchedule_growsAndCaps(t *testing.T) {
	waits := []time.Duration{taskSchedule.First}
	for range 11 {
		waits = append(waits, taskSchedule.Next(waits[len(waits)-1]))
	}
	require.Equal(t, 100*time.Millisecond, waits[0], "the first look")
	require.Equal(t, 150*time.Millisecond, waits[1])
	for i := 1; i < len(waits); i++ {
		require.GreaterOrEqual(t, waits[i], waits[i-1])
		require.LessOrEqual(t, waits[i], 2*time.Second)
	}
	require.Equal(t, 2*time.Second, waits[len(waits)-1])
}

func TestWaitTask_endsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := &Client{} // no call is made: the wait ends first
	err := c.waitTask(ctx, "UPID:pve-a6000:000A1B2C:0123ABCD:65F0A1B2:qmstart:101:root@pam:")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "qmstart")
}
