package eks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPollEndsWhenDoneOrFailed(t *testing.T) {
	calls := 0
	err := pollNow(context.Background(), "the test", func(context.Context) (bool, error) {
		calls++
		return true, nil
	})
	require.NoError(t, err)
	require.Equal(t, 1, calls, "pollNow checks at once")

	cause := errors.New("CREATE_FAILED")
	err = pollNow(context.Background(), "the test", func(context.Context) (bool, error) { return false, cause })
	require.ErrorIs(t, err, cause)
}

func TestPollIsBoundedByItsContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	calls := 0
	err := pollNow(ctx, "EKS node group (prod:gpu) to become ACTIVE", func(context.Context) (bool, error) {
		calls++
		cancel(context.DeadlineExceeded) // as the create's timeout would, while it waits
		return false, nil
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.EqualError(t, err, "waiting for EKS node group (prod:gpu) to become ACTIVE: context deadline exceeded")
	require.Equal(t, 1, calls)
}

func TestPollIntervalsGrowToTheirCap(t *testing.T) {
	wait := time.Duration(0)
	var waits []time.Duration
	for range 10 {
		wait = nextWait(wait)
		waits = append(waits, wait)
	}
	require.Equal(t, []time.Duration{2 * time.Second, 3 * time.Second, 4500 * time.Millisecond, 6750 * time.Millisecond, 10125 * time.Millisecond,
		15 * time.Second, 15 * time.Second, 15 * time.Second, 15 * time.Second, 15 * time.Second}, waits)
}
