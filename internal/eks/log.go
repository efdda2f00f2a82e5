package eks

import (
	"context"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// Log messages at debug level, so that TF_LOG=DEBUG shows where an apply
// spends its time on AWS: every API operation (retries included) with its
// duration and error code, and every wait with its polls. Parameters,
// credentials and tokens are never logged.
const (
	logCallFinished = "AWS call finished"
	logWaitStarted  = "waiting on AWS"
	logWaitPolled   = "polled AWS"
	logWaitFinished = "waited on AWS"
)

// logCalls is an SDK API option that logs each operation once, around all
// of its attempts.
func logCalls(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("GPUProviderLogCall",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			started := time.Now()
			out, md, err := next.HandleInitialize(ctx, in)
			fields := map[string]any{
				"service":     awsmiddleware.GetServiceID(ctx),
				"operation":   awsmiddleware.GetOperationName(ctx),
				"duration_ms": time.Since(started).Milliseconds(),
			}
			if err != nil {
				fields["error_code"] = apiErrorCode(err)
				fields["error"] = err.Error()
			}
			tflog.Debug(ctx, logCallFinished, fields)
			return out, md, err
		}), middleware.Before)
}
