package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// Log messages that mark the provider waiting on the cluster. bench/applybench
// reads them (TF_LOG_PROVIDER=DEBUG) to split an apply's wall time into time
// spent waiting on Kubernetes and the provider's own overhead.
const (
	logWaitStarted  = "waiting on the cluster"
	logWaitFinished = "waited on the cluster"
)

// startClusterWait logs the start of a wait for what (a word such as
// "job_completion", no spaces) on the object id, and returns the function
// that logs its end, with both instants at nanosecond resolution.
func startClusterWait(ctx context.Context, what, id string) func(error) {
	started := time.Now()
	tflog.Debug(ctx, logWaitStarted, map[string]any{"what": what, "id": id})
	return func(err error) {
		ended := time.Now()
		tflog.Debug(ctx, logWaitFinished, map[string]any{
			"what":       what,
			"id":         id,
			"ok":         err == nil,
			"started_at": started.UTC().Format(time.RFC3339Nano),
			"ended_at":   ended.UTC().Format(time.RFC3339Nano),
			"waited_ms":  ended.Sub(started).Milliseconds(),
		})
	}
}
