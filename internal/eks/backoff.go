package eks

import (
	"context"
	"fmt"
	"time"
)

// Polling EKS for a status change: the first look after pollInitial, each
// next one pollFactor later, never more than pollMax apart. Bounded by ctx.
const (
	pollInitial = 2 * time.Second
	pollFactor  = 1.5
	pollMax     = 15 * time.Second
)

// pollUntil calls check after growing intervals until it reports done, fails,
// or ctx ends; what names the wait in the timeout error.
func pollUntil(ctx context.Context, what string, check func(context.Context) (done bool, err error)) error {
	interval := pollInitial
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-timer.C:
		}
		done, err := check(ctx)
		if err != nil || done {
			return err
		}
		interval = min(time.Duration(float64(interval)*pollFactor), pollMax)
		timer.Reset(interval)
	}
}
