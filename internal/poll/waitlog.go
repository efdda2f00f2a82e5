package poll

import (
	"context"
	"maps"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// Log is a backend's wording for its wait lines, e.g. "waiting on AWS",
// "polled AWS", "waited on AWS".
type Log struct {
	Started, Polled, Finished string
}

// Start logs the start of a wait (fields name it: "what", and "id" where
// there is one) and returns the function that logs its end: both instants
// at nanosecond resolution (bench/applybench reads them), how long it took
// and whether it succeeded, with the error when it did not.
func (l Log) Start(ctx context.Context, fields map[string]any) func(error) {
	started := time.Now()
	tflog.Debug(ctx, l.Started, fields)
	return func(err error) {
		ended := time.Now()
		done := maps.Clone(fields)
		if done == nil {
			done = map[string]any{}
		}
		done["ok"] = err == nil
		done["started_at"] = started.UTC().Format(time.RFC3339Nano)
		done["ended_at"] = ended.UTC().Format(time.RFC3339Nano)
		done["waited_ms"] = ended.Sub(started).Milliseconds()
		if err != nil {
			done["error"] = err.Error()
		}
		tflog.Debug(ctx, l.Finished, done)
	}
}
