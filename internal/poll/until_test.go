package poll

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var testLog = Log{Started: "waiting", Polled: "polled", Finished: "waited"}

func TestUntilEndsWhenDoneOrFailed(t *testing.T) {
	calls := 0
	err := Until(context.Background(), testLog, "the test", Schedule{Initial: time.Millisecond, Factor: 2, Max: time.Millisecond}, func(context.Context) (bool, error) {
		calls++
		return calls == 3, nil
	})
	require.NoError(t, err)
	require.Equal(t, 3, calls, "checks until done")

	cause := errors.New("CREATE_FAILED")
	err = Until(context.Background(), testLog, "the test", Schedule{}, func(context.Context) (bool, error) { return false, cause })
	require.ErrorIs(t, err, cause)
	require.Equal(t, cause, err, "a check's error comes back as it is")
}

func TestUntilIsBoundedByItsContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	calls := 0
	err := Until(ctx, testLog, "EKS node group (prod:gpu) to become ACTIVE", Schedule{Initial: time.Hour, Factor: 1, Max: time.Hour}, func(context.Context) (bool, error) {
		calls++
		cancel(context.DeadlineExceeded) // as a create's timeout would, while it waits
		return false, nil
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.EqualError(t, err, "waiting for EKS node group (prod:gpu) to become ACTIVE: context deadline exceeded")
	require.Equal(t, 1, calls)
}

func TestUntilChecksNothingOnAnEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	err := Until(ctx, testLog, "a task", Schedule{First: time.Hour}, func(context.Context) (bool, error) { calls++; return true, nil })
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, calls)
}

func TestScheduleGrowsToItsCap(t *testing.T) {
	s := Schedule{Initial: 2 * time.Second, Factor: 1.5, Max: 15 * time.Second}
	var wait time.Duration
	var waits []time.Duration
	for range 8 {
		wait = s.Next(wait)
		waits = append(waits, wait)
	}
	require.Equal(t, []time.Duration{2 * time.Second, 3 * time.Second, 4500 * time.Millisecond, 6750 * time.Millisecond,
		10125 * time.Millisecond, 15 * time.Second, 15 * time.Second, 15 * time.Second}, waits)
}
