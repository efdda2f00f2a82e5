package eks

import (
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/poll"
)

// How this package waits on an EKS status (a node group's, an update's):
// through poll.Until, bounded by the caller's context, with checks growing
// from 2 s apart by half each time, never more than 15 s apart.
var (
	// checkNow looks at once: the status may already be what is waited for.
	checkNow = poll.Schedule{Initial: 2 * time.Second, Factor: 1.5, Max: 15 * time.Second}
	// checkAfterRequest first looks one interval after a request that
	// changed the status, which EKS has not moved on yet.
	checkAfterRequest = poll.Schedule{First: 2 * time.Second, Initial: 2 * time.Second, Factor: 1.5, Max: 15 * time.Second}
)

// waitLog frames every wait of this package in the log, in the shape
// every backend's waits share (internal/poll).
var waitLog = poll.Log{Started: logWaitStarted, Polled: logWaitPolled, Finished: logWaitFinished}
