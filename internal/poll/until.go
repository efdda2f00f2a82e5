package poll

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// Until calls check on schedule until it reports done or an error, or ctx
// ends; what names the wait ("EKS node group (prod:gpu) to become ACTIVE")
// in the log lines and in the error when ctx ends first, which wraps
// context.Cause(ctx). An error from check comes back as it is.
func Until(ctx context.Context, log Log, what string, s Schedule, check func(context.Context) (done bool, err error)) (err error) {
	end := log.Start(ctx, map[string]any{"what": what})
	defer func() { end(err) }()
	wait := s.First
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
		wait = s.Next(wait)
		if log.Polled != "" {
			tflog.Debug(ctx, log.Polled, map[string]any{"what": what, "polls": polls, "next_in_ms": wait.Milliseconds()})
		}
		timer.Reset(wait)
	}
}
