package eks

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// Polling EKS for a status change: the first look after pollInitial, each
// next one pollFactor later, never more than pollMax apart. Bounded by ctx.
const (
	pollInitial = 2 * time.Second
	pollFactor  = 1.5
	pollMax     = 15 * time.Second
)

// pollUntil calls check after growing intervals until it reports done, fails,
// or ctx ends; what names the wait in logs and in the timeout error.
func pollUntil(ctx context.Context, what string, check func(context.Context) (done bool, err error)) (err error) {
	end := startWait(ctx, what)
	defer func() { end(err) }()
	return poll(ctx, what, pollInitial, check)
}

// pollNow is pollUntil with a first check at once.
func pollNow(ctx context.Context, what string, check func(context.Context) (done bool, err error)) (err error) {
	end := startWait(ctx, what)
	defer func() { end(err) }()
	return poll(ctx, what, 0, check)
}

// poll checks after first, then after intervals growing from pollInitial
// (or from first, when first is not zero) by pollFactor up to pollMax.
func poll(ctx context.Context, what string, first time.Duration, check func(context.Context) (bool, error)) error {
	wait := first
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for polls := 1; ; polls++ {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-timer.C:
		}
		done, err := check(ctx)
		if err != nil || done {
			return err
		}
		wait = nextWait(wait)
		tflog.Debug(ctx, logWaitPolled, map[string]any{"what": what, "polls": polls, "next_in_ms": wait.Milliseconds()})
		timer.Reset(wait)
	}
}

// nextWait is the wait after one of wait: pollInitial after none, then
// pollFactor longer each time, up to pollMax.
func nextWait(wait time.Duration) time.Duration {
	if wait == 0 {
		return pollInitial
	}
	return min(time.Duration(float64(wait)*pollFactor), pollMax)
}
