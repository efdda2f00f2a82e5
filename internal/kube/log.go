package kube

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/poll"
)

// Log messages around the calls and waits of this package, at debug level,
// so that TF_LOG=DEBUG shows where an apply spends its time. Every HTTP
// request is logged too, by the Cluster's transport. bench/applybench reads
// the wait lines (TF_LOG_PROVIDER=DEBUG) to split an apply's wall time into
// time spent waiting on Kubernetes and the provider's own overhead.
const (
	logWaitStarted  = "waiting on the cluster"
	logWaitFinished = "waited on the cluster"
	logCallFinished = "Kubernetes call finished"
)

// waitLog frames every wait of this package in the log, in the shape
// every backend's waits share (internal/poll).
var waitLog = poll.Log{Started: logWaitStarted, Finished: logWaitFinished}

// startWait logs the start of a wait for what (a word such as
// "job_completion", no spaces) on the object id, and returns the function
// that logs its end, with both instants at nanosecond resolution and
// whether it succeeded.
func startWait(ctx context.Context, what, id string) func(error) {
	return waitLog.Start(ctx, map[string]any{"what": what, "id": id})
}

// logCall returns the function that logs the end of an operation of
// several requests (what, e.g. "creating Job", on id) with its duration and
// outcome; each request is also logged on its own by the transport.
func logCall(ctx context.Context, what, id string) func(error) {
	started := time.Now()
	return func(err error) {
		fields := map[string]any{"what": what, "id": id, "ok": err == nil, "duration_ms": time.Since(started).Milliseconds()}
		if err != nil {
			fields["error"] = err.Error()
		}
		tflog.Debug(ctx, logCallFinished, fields)
	}
}
