package telemetry

import (
	"fmt"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpuhealth"
)

// XIDMeaning says what an XID usually means; ok is false for XIDs the
// table does not know. The table is gpuhealth's (gpuhealth.XIDMeaning), so
// the health agent's condition messages and the telemetry's findings word
// an XID the same way.
func XIDMeaning(xid uint64) (meaning string, ok bool) {
	return gpuhealth.XIDMeaning(xid)
}

// describeXID is an XID event's Detail: its usual meaning, or where to look
// it up.
func describeXID(xid uint64) string {
	if meaning, ok := XIDMeaning(xid); ok {
		return meaning
	}
	return fmt.Sprintf("XID %d: see NVIDIA's XID catalog (https://docs.nvidia.com/deploy/xid-errors/)", xid)
}
